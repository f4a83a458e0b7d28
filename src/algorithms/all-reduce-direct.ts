import {
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
 * Direct all-reduce for ranks that share memory: rank r owns the r-th 1/n of the data, reduces it
 * by reading that part of every peer's input in place, then every rank copies every owner's
 * result. Each element is read n times and written twice in all, with no relay through other
 * ranks, which is what shared memory makes cheap (and what a network makes expensive).
 */
export function allReduceDirect(shape: CallShape, rank: number): Schedule {
  const n = shape.nranks;
  const list = new StepList();
  for (const pieces of pieceRounds(splitEven(shape.count, n), shape.chunkCount)) {
    const mine = pieces[rank];
    for (let s = 1; s < n; s++) {
      const peer = mod(rank + s, n);
      list.send(peer, slice('input', pieces[peer].offset, pieces[peer].count));
    }
    if (n === 1) list.copy(slice('input', mine.offset, mine.count), slice('output', mine.offset, mine.count));
    for (let s = 1; s < n; s++) {
      list.recvReduce(
        mod(rank - s, n),
        slice('output', mine.offset, mine.count),
        slice(s === 1 ? 'input' : 'output', mine.offset, mine.count),
      );
    }
    for (let s = 1; s < n; s++) list.send(mod(rank + s, n), slice('output', mine.offset, mine.count));
    for (let s = 1; s < n; s++) {
      const peer = mod(rank - s, n);
      list.recv(peer, slice('output', pieces[peer].offset, pieces[peer].count));
    }
  }
  return singleChannel(shape, rank, 'direct', list);
}
