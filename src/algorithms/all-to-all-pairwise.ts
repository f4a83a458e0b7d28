import { type CallShape, type Schedule, StepList, mod, singleChannel, slice } from './schedule.js';

/** Per-peer counts and displacements of an all-to-all, equal or variable. */
export function allToAllLayout(shape: CallShape): { sendCounts: readonly number[]; sendDispls: readonly number[]; recvCounts: readonly number[]; recvDispls: readonly number[] } {
  const n = shape.nranks;
  const equal = Array.from({ length: n }, () => shape.count);
  const equalDispls = Array.from({ length: n }, (_, i) => i * shape.count);
  return {
    sendCounts: shape.sendCounts ?? equal,
    sendDispls: shape.sendDispls ?? equalDispls,
    recvCounts: shape.recvCounts ?? equal,
    recvDispls: shape.recvDispls ?? equalDispls,
  };
}

/**
 * Pairwise all-to-all: at step s a rank sends to rank+s and receives from rank-s, so every step
 * is a perfect matching and no rank is flooded. Empty blocks are still announced so that counts
 * that disagree between ranks are reported rather than silently skipped. In place, the input is
 * first copied to scratch: a rank must not receive over a block it has not sent yet.
 */
export function allToAllPairwise(shape: CallShape, rank: number): Schedule {
  const n = shape.nranks;
  const { sendCounts, sendDispls, recvCounts, recvDispls } = allToAllLayout(shape);
  const list = new StepList();
  let source: 'input' | 'scratch' = 'input';
  let scratchCount = 0;
  if (shape.inPlace && n > 1) {
    scratchCount = Math.max(0, ...sendCounts.map((c, i) => sendDispls[i] + c));
    list.copy(slice('input', 0, scratchCount), slice('scratch', 0, scratchCount));
    source = 'scratch';
  }
  list.copy(slice(source, sendDispls[rank], sendCounts[rank]), slice('output', recvDispls[rank], recvCounts[rank]));
  for (let s = 1; s < n; s++) {
    const to = mod(rank + s, n);
    const from = mod(rank - s, n);
    list.sendAlways(to, slice(source, sendDispls[to], sendCounts[to]));
    list.recvAlways(from, slice('output', recvDispls[from], recvCounts[from]));
  }
  return singleChannel(shape, rank, 'pairwise', list, scratchCount);
}
