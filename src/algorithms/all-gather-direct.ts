import { type CallShape, type Schedule, StepList, mod, singleChannel, slice } from './schedule.js';

/**
 * Direct all-gather: every rank posts its block to every peer at once and reads every peer's
 * block straight from it. Each byte is copied once per receiver, as in the ring, but without the
 * ring's n-1 dependent hand-offs: on shared memory with more ranks than cores each hand-off is a
 * sleep and a wake-up. Over a network the sender's link would carry n-1 copies; the tuner keeps
 * it to shared memory.
 */
export function allGatherDirect(shape: CallShape, rank: number): Schedule {
  const n = shape.nranks;
  const c = shape.count;
  const list = new StepList();
  // Rotated orders, so the ranks do not all read from the same peer at the same time; posts
  // first, so peers copy while this rank copies its own block (in place it is already there, and
  // a copy onto bytes still being read would wait for the readers).
  for (let s = 1; s < n; s++) list.send(mod(rank + s, n), slice('input', 0, c));
  if (!shape.inPlace) list.copy(slice('input', 0, c), slice('output', rank * c, c));
  for (let s = 1; s < n; s++) {
    const peer = mod(rank - s, n);
    list.recv(peer, slice('output', peer * c, c));
  }
  return singleChannel(shape, rank, 'direct', list);
}
