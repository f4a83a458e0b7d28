import { type CallShape, type Schedule, StepList, singleChannel, slice } from './schedule.js';

/** Linear gather: every rank sends its block straight to the root, which reads them in rank order. */
export function gatherLinear(shape: CallShape, rank: number): Schedule {
  const c = shape.count;
  const list = new StepList();
  if (rank !== shape.root) {
    list.send(shape.root, slice('input', 0, c));
  } else {
    list.copy(slice('input', 0, c), slice('output', rank * c, c));
    for (let p = 0; p < shape.nranks; p++) if (p !== rank) list.recv(p, slice('output', p * c, c));
  }
  return singleChannel(shape, rank, 'linear', list);
}
