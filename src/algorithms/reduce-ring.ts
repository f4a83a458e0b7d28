import { type CallShape, type Schedule, StepList, mod, messagePieces, singleChannel, slice } from './schedule.js';

/**
 * Ring (chain) reduce, pipelined by chunks: the chain starts after the root and ends at it; each
 * rank folds the partial result arriving from its predecessor into its own input and passes it
 * on, as NCCL's reduce does. Inner ranks accumulate in scratch (the input must stay untouched);
 * the root folds into its output.
 */
export function reduceRing(shape: CallShape, rank: number): Schedule {
  const n = shape.nranks;
  const isRoot = rank === shape.root;
  const isFirst = rank === mod(shape.root + 1, n);
  const accumulator = isRoot ? 'output' : 'scratch';
  const list = new StepList();
  for (const piece of messagePieces(shape)) {
    const input = slice('input', piece.offset, piece.count);
    const acc = slice(accumulator, piece.offset, piece.count);
    if (n === 1) {
      list.copy(input, acc);
    } else if (isFirst) {
      list.send(mod(rank + 1, n), input);
    } else {
      list.recvReduce(mod(rank - 1, n), acc, input);
      if (!isRoot) list.send(mod(rank + 1, n), acc);
    }
  }
  const needsScratch = n > 2 && !isRoot && !isFirst;
  return singleChannel(shape, rank, 'ring', list, needsScratch ? shape.count : 0);
}
