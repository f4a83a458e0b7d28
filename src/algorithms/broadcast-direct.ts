import { type CallShape, type Schedule, StepList, singleChannel, slice } from './schedule.js';

/**
 * Direct broadcast: the root posts its buffer to every rank, and each reads it straight from the
 * root. One copy per receiver and no chain of forwarding ranks; over a network the root's link
 * would carry n-1 copies, so the tuner keeps it to shared memory.
 */
export function broadcastDirect(shape: CallShape, rank: number): Schedule {
  const { nranks: n, root, count: c } = shape;
  const list = new StepList();
  if (rank === root) {
    // Posts first, so the peers copy while the root does; in place there is nothing to copy.
    for (let s = 1; s < n; s++) list.send((root + s) % n, slice('input', 0, c));
    if (!shape.inPlace) list.copy(slice('input', 0, c), slice('output', 0, c));
  } else {
    list.recv(root, slice('output', 0, c));
  }
  return singleChannel(shape, rank, 'direct', list);
}
