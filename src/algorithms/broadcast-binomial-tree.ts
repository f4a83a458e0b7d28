import { binomialTree } from './binomial-tree.js';
import { type CallShape, type Schedule, StepList, messagePieces, singleChannel, slice } from './schedule.js';

/** Binomial-tree broadcast, pipelined by chunks: a node forwards chunk j while chunk j+1 arrives. */
export function broadcastBinomialTree(shape: CallShape, rank: number): Schedule {
  const tree = binomialTree(shape.nranks, shape.root, rank);
  const list = new StepList();
  const isRoot = rank === shape.root;
  for (const piece of messagePieces(shape)) {
    if (isRoot) list.copy(slice('input', piece.offset, piece.count), slice('output', piece.offset, piece.count));
    else list.recv(tree.parent!, slice('output', piece.offset, piece.count));
    for (const child of tree.children) list.send(child, slice(isRoot ? 'input' : 'output', piece.offset, piece.count));
  }
  return singleChannel(shape, rank, 'binomial_tree', list);
}
