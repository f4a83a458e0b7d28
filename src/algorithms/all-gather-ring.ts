import {
  type CallShape,
  type Range,
  type Schedule,
  StepList,
  mod,
  pieceRounds,
  singleChannel,
  slice,
} from './schedule.js';

/** Ring all-gather: n-1 steps, each rank forwards the block it received last. */
export function allGatherRing(shape: CallShape, rank: number): Schedule {
  const n = shape.nranks;
  const c = shape.count;
  const list = new StepList();
  list.copy(slice('input', 0, c), slice('output', rank * c, c));
  const blocks: Range[] = Array.from({ length: n }, (_, i) => ({ offset: i * c, count: c }));
  for (const pieces of pieceRounds(blocks, shape.chunkCount)) {
    for (let s = 0; s < n - 1; s++) {
      const out = pieces[mod(rank - s, n)];
      list.send(mod(rank + 1, n), slice('output', out.offset, out.count));
      const inc = pieces[mod(rank - s - 1, n)];
      list.recv(mod(rank - 1, n), slice('output', inc.offset, inc.count));
    }
  }
  return singleChannel(shape, rank, 'ring', list);
}
