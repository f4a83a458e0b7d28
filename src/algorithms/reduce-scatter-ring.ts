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

/**
 * Ring reduce-scatter: block b's partial sum travels the ring and completes at rank b. Partial
 * sums live in two alternating scratch slots, since the input must stay untouched and a slot
 * may be rewritten only after the right neighbour has read it.
 */
export function reduceScatterRing(shape: CallShape, rank: number): Schedule {
  const n = shape.nranks;
  const c = shape.count;
  const list = new StepList();
  if (n === 1) {
    list.copy(slice('input', 0, c), slice('output', 0, c));
    return singleChannel(shape, rank, 'ring', list);
  }
  const blocks: Range[] = Array.from({ length: n }, (_, i) => ({ offset: i * c, count: c }));
  const rounds = pieceRounds(blocks, shape.chunkCount);
  const slotSize = rounds[0][0].count;
  for (const pieces of rounds) {
    const relative = (p: Range) => p.offset % c;
    for (let s = 0; s < n - 1; s++) {
      const outBlock = mod(rank - s - 1, n);
      const out = pieces[outBlock];
      list.send(
        mod(rank + 1, n),
        s === 0 ? slice('input', out.offset, out.count) : slice('scratch', ((s - 1) % 2) * slotSize, out.count),
      );
      const inc = pieces[mod(rank - s - 2, n)];
      const dst =
        s === n - 2 ? slice('output', relative(inc), inc.count) : slice('scratch', (s % 2) * slotSize, inc.count);
      list.recvReduce(mod(rank - 1, n), dst, slice('input', inc.offset, inc.count));
    }
  }
  return singleChannel(shape, rank, 'ring', list, n > 2 ? 2 * slotSize : 0);
}
