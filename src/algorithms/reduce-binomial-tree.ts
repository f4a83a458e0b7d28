import { binomialTree } from './binomial-tree.js';
import { type CallShape, type Schedule, StepList, messagePieces, singleChannel, slice } from './schedule.js';

/**
 * Binomial-tree reduce, pipelined by chunks. Inner nodes fold their children's partial results
 * into scratch (the input must stay untouched); the root folds into its output. Children are
 * taken smallest subtree first, the order in which their results are ready.
 */
export function reduceBinomialTree(shape: CallShape, rank: number): Schedule {
  const tree = binomialTree(shape.nranks, shape.root, rank);
  const children = [...tree.children].reverse();
  const list = new StepList();
  const isRoot = rank === shape.root;
  const accumulator = isRoot ? 'output' : 'scratch';
  const needsScratch = !isRoot && children.length > 0;
  for (const piece of messagePieces(shape)) {
    const input = slice('input', piece.offset, piece.count);
    const acc = slice(accumulator, piece.offset, piece.count);
    if (isRoot && children.length === 0) list.copy(input, acc);
    children.forEach((child, i) => {
      list.recvReduce(child, acc, i === 0 ? input : acc);
    });
    if (!isRoot) list.send(tree.parent!, children.length > 0 ? acc : input);
  }
  return singleChannel(shape, rank, 'binomial_tree', list, needsScratch ? shape.count : 0);
}
