import { type BufferId, type CallShape, type Schedule, StepList, singleChannel, slice } from './schedule.js';

/**
 * Recursive doubling all-reduce (Thakur, Rabenseifner & Gropp 2005): log2(n) exchanges of the
 * whole message, the latency-optimal choice for small messages. With n not a power of two, the
 * first 2*rem ranks pair up: even ones hand their data to the odd neighbour and get the result
 * back at the end.
 *
 * Each exchange reads the partner's buffer in place, so a rank alternates between two buffers
 * (output and scratch): it never overwrites the buffer its partner is still reading. Every rank
 * combines the same two partial results in each exchange, and the operations are commutative,
 * so all ranks end with bitwise the same values.
 */
export function allReduceRecursiveDoubling(shape: CallShape, rank: number): Schedule {
  const n = shape.nranks;
  const count = shape.count;
  const list = new StepList();
  const all = (buf: BufferId) => slice(buf, 0, count);
  let pow2 = 1;
  while (pow2 * 2 <= n) pow2 *= 2;
  const rem = n - pow2;

  if (rank < 2 * rem && rank % 2 === 0) {
    list.send(rank + 1, all('input'));
    list.recv(rank + 1, all('output'));
    return singleChannel(shape, rank, 'recursive_doubling', list);
  }

  let current: BufferId = 'input';
  if (rank < 2 * rem) {
    list.recvReduce(rank - 1, all('output'), all('input'));
    current = 'output';
  }
  const newRank = rank < 2 * rem ? rank >> 1 : rank - rem;
  const realRank = (nr: number) => (nr < rem ? nr * 2 + 1 : nr + rem);
  let usesScratch = false;
  for (let mask = 1; mask < pow2; mask <<= 1) {
    const partner = realRank(newRank ^ mask);
    // In place, input and output are one buffer, so the first exchange must land in scratch too.
    const next: BufferId = current === 'scratch' || (current === 'input' && !shape.inPlace) ? 'output' : 'scratch';
    usesScratch ||= next === 'scratch';
    list.send(partner, all(current));
    list.recvReduce(partner, all(next), all(current));
    current = next;
  }
  list.copy(all(current), all('output'));
  if (rank < 2 * rem) list.send(rank - 1, all('output'));
  return singleChannel(shape, rank, 'recursive_doubling', list, usesScratch ? count : 0);
}
