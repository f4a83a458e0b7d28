import { type CallShape, type Schedule, StepList, mod, messagePieces, singleChannel, slice } from './schedule.js';

/**
 * Ring (chain) broadcast, pipelined by chunks: the root sends each piece to the next rank, and
 * every rank but the last forwards each piece as it arrives, as NCCL's broadcast does. Every
 * link of the chain carries the message once, so a large message moves at one link's speed
 * whatever the rank count, where a binomial tree's root sends it log2(n) times.
 */
export function broadcastRing(shape: CallShape, rank: number): Schedule {
  const n = shape.nranks;
  const isRoot = rank === shape.root;
  const isLast = rank === mod(shape.root - 1, n);
  const list = new StepList();
  for (const piece of messagePieces(shape)) {
    if (isRoot) list.copy(slice('input', piece.offset, piece.count), slice('output', piece.offset, piece.count));
    else list.recv(mod(rank - 1, n), slice('output', piece.offset, piece.count));
    if (!isLast) list.send(mod(rank + 1, n), slice(isRoot ? 'input' : 'output', piece.offset, piece.count));
  }
  return singleChannel(shape, rank, 'ring', list);
}
