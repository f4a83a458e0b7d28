import { type CallShape, type Schedule, StepList, singleChannel, slice } from './schedule.js';

/** Linear scatter: the root posts every block at once; each rank reads its own. */
export function scatterLinear(shape: CallShape, rank: number): Schedule {
  const c = shape.count;
  const list = new StepList();
  if (rank !== shape.root) {
    list.recv(shape.root, slice('output', 0, c));
  } else {
    for (let p = 0; p < shape.nranks; p++) if (p !== rank) list.send(p, slice('input', p * c, c));
    list.copy(slice('input', rank * c, c), slice('output', 0, c));
  }
  return singleChannel(shape, rank, 'linear', list);
}
