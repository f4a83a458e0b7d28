import { type CallShape, type Schedule, mod, singleChannel, slice } from './schedule.js';
import { allToAllStart } from './all-to-all-layout.js';

/**
 * Pairwise all-to-all: at step s a rank sends to rank+s and receives from rank-s, so every step
 * is a perfect matching and no rank is flooded. Empty blocks are still announced so that counts
 * that disagree between ranks are reported rather than silently skipped.
 */
export function allToAllPairwise(shape: CallShape, rank: number): Schedule {
  const n = shape.nranks;
  const {
    layout: { sendCounts, sendDispls, recvCounts, recvDispls },
    list,
    source,
    scratchCount,
  } = allToAllStart(shape, rank);
  for (let s = 1; s < n; s++) {
    const to = mod(rank + s, n);
    const from = mod(rank - s, n);
    list.sendAlways(to, slice(source, sendDispls[to], sendCounts[to]));
    list.recvAlways(from, slice('output', recvDispls[from], recvCounts[from]));
  }
  return singleChannel(shape, rank, 'pairwise', list, scratchCount);
}
