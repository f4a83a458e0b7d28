import { type CallShape, type Schedule, StepList, mod, singleChannel, slice } from '../algorithms/schedule.js';

/** The name `tsccl sim` gives nccl-tests' sendrecv pattern in its rows. */
export const SHIFT = 'shift';

/**
 * nccl-tests' sendrecv as a schedule: every rank sends its buffer to the next rank and receives
 * the previous rank's, all at once (ncclSend and ncclRecv in one group). Not a collective of the
 * library's, which runs point-to-point calls for it, so it lives with the simulator.
 */
export function sendRecvShift(shape: CallShape, rank: number): Schedule {
  const n = shape.nranks;
  const list = new StepList();
  if (n === 1) {
    list.copy(slice('input', 0, shape.count), slice('output', 0, shape.count));
  } else {
    list.send(mod(rank + 1, n), slice('input', 0, shape.count));
    list.recv(mod(rank - 1, n), slice('output', 0, shape.count));
  }
  return singleChannel(shape, rank, SHIFT, list);
}
