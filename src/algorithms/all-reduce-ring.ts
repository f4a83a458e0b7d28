import {
  type BufferId,
  type CallShape,
  type Schedule,
  StepList,
  mod,
  pieceRounds,
  singleChannel,
  slice,
  splitEven,
} from './schedule.js';

/**
 * Ring all-reduce: a reduce-scatter around the ring, then an all-gather (Patarasuk & Yuan; the
 * algorithm NCCL and Gloo use for bandwidth). Each rank sends 2(n-1)/n of the data. Large
 * messages run as rounds of n pieces so that the rounds pipeline.
 */
export function allReduceRing(shape: CallShape, rank: number): Schedule {
  const list = new StepList();
  const ring = Array.from({ length: shape.nranks }, (_, r) => r);
  appendRingAllReduce(list, { ring, position: rank, count: shape.count, chunkCount: shape.chunkCount, own: 'input' });
  return singleChannel(shape, rank, 'ring', list);
}

export interface RingAllReduce {
  /** Ranks in ring order. */
  readonly ring: readonly number[];
  /** This rank's index in `ring`. */
  readonly position: number;
  readonly count: number;
  readonly chunkCount: number;
  /** Where this rank's own contribution is: the input, or already in the output. */
  readonly own: BufferId;
}

/** The steps of one rank in a ring all-reduce over a group of ranks; the result lands in output. */
export function appendRingAllReduce(list: StepList, ring: RingAllReduce): void {
  const n = ring.ring.length;
  const right = ring.ring[mod(ring.position + 1, n)];
  const left = ring.ring[mod(ring.position - 1, n)];
  const me = ring.position;
  for (const pieces of pieceRounds(splitEven(ring.count, n), ring.chunkCount)) {
    const piece = (i: number) => pieces[mod(i, n)];
    if (n === 1)
      list.copy(slice(ring.own, piece(0).offset, piece(0).count), slice('output', piece(0).offset, piece(0).count));
    for (let s = 0; s < n - 1; s++) {
      const out = piece(me - s);
      list.send(right, slice(s === 0 ? ring.own : 'output', out.offset, out.count));
      const inc = piece(me - s - 1);
      list.recvReduce(left, slice('output', inc.offset, inc.count), slice(ring.own, inc.offset, inc.count));
    }
    for (let s = 0; s < n - 1; s++) {
      const out = piece(me + 1 - s);
      list.send(right, slice('output', out.offset, out.count));
      const inc = piece(me - s);
      list.recv(left, slice('output', inc.offset, inc.count));
    }
  }
}
