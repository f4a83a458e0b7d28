import { type CallShape, type Schedule, StepList, mod, pieceRounds, singleChannel, slice, splitEven } from './schedule.js';

/**
 * Ring all-reduce: a reduce-scatter around the ring, then an all-gather (Patarasuk & Yuan; the
 * algorithm NCCL and Gloo use for bandwidth). Each rank sends 2(n-1)/n of the data. Large
 * messages run as rounds of n pieces so that the rounds pipeline.
 */
export function allReduceRing(shape: CallShape, rank: number): Schedule {
  const n = shape.nranks;
  const list = new StepList();
  const right = mod(rank + 1, n);
  const left = mod(rank - 1, n);
  for (const pieces of pieceRounds(splitEven(shape.count, n), shape.chunkCount)) {
    const piece = (i: number) => pieces[mod(i, n)];
    if (n === 1) list.copy(slice('input', piece(0).offset, piece(0).count), slice('output', piece(0).offset, piece(0).count));
    for (let s = 0; s < n - 1; s++) {
      const out = piece(rank - s);
      list.send(right, slice(s === 0 ? 'input' : 'output', out.offset, out.count));
      const inc = piece(rank - s - 1);
      list.recvReduce(left, slice('output', inc.offset, inc.count), slice('input', inc.offset, inc.count));
    }
    for (let s = 0; s < n - 1; s++) {
      const out = piece(rank + 1 - s);
      list.send(right, slice('output', out.offset, out.count));
      const inc = piece(rank - s);
      list.recv(left, slice('output', inc.offset, inc.count));
    }
  }
  return singleChannel(shape, rank, 'ring', list);
}
