import { type CallShape, type Schedule, StepList, mod, singleChannel, slice } from './schedule.js';

/** Dissemination barrier (Hensgen, Finkel & Manber): ceil(log2 n) rounds of empty messages to rank + 2^k. */
export function barrierDissemination(shape: CallShape, rank: number): Schedule {
  const n = shape.nranks;
  const list = new StepList();
  for (let distance = 1; distance < n; distance *= 2) {
    list.sendAlways(mod(rank + distance, n), slice('input', 0, 0));
    list.recvAlways(mod(rank - distance, n), slice('input', 0, 0));
  }
  return singleChannel(shape, rank, 'dissemination', list);
}
