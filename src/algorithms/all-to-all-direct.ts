import { type CallShape, type Schedule, mod, singleChannel, slice } from './schedule.js';
import { allToAllStart } from './all-to-all-layout.js';

/**
 * Direct all-to-all: a rank posts its block for every peer at once, then receives every peer's
 * block, in rotated orders so that the ranks do not all read from one peer at a time. Every
 * exchange is in flight together, as NCCL runs an all-to-all (grouped sends and receives to all
 * peers, spread over its channels): between servers each NIC then carries its share for the
 * whole call, where the pairwise steps wait on each other and leave links idle. The same bytes
 * as pairwise; more messages in flight.
 */
export function allToAllDirect(shape: CallShape, rank: number): Schedule {
  const n = shape.nranks;
  const {
    layout: { sendCounts, sendDispls, recvCounts, recvDispls },
    list,
    source,
    scratchCount,
  } = allToAllStart(shape, rank);
  for (let s = 1; s < n; s++) {
    const to = mod(rank + s, n);
    list.sendAlways(to, slice(source, sendDispls[to], sendCounts[to]));
  }
  for (let s = 1; s < n; s++) {
    const from = mod(rank - s, n);
    list.recvAlways(from, slice('output', recvDispls[from], recvCounts[from]));
  }
  return singleChannel(shape, rank, 'direct', list, scratchCount);
}
