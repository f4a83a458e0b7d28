import { type CallShape, type Schedule, StepList, hostLayout, mod, singleChannel, slice } from './schedule.js';

/**
 * Hierarchical reduce-scatter: each host's leader reduces its ranks' inputs into scratch, the
 * leaders exchange only the blocks that belong to each other's ranks and fold them in, and each
 * leader hands its ranks their finished blocks.
 */
export function reduceScatterHierarchical(shape: CallShape, rank: number): Schedule {
  const { hostOf, members, leaders } = hostLayout(shape);
  const c = shape.count;
  const n = shape.nranks;
  const host = hostOf[rank];
  const leader = leaders[host];
  const acc = (r: number) => slice('scratch', r * c, c);
  const list = new StepList();
  if (rank !== leader) {
    list.send(leader, slice('input', 0, n * c));
    list.recv(leader, slice('output', 0, c));
    return singleChannel(shape, rank, 'hierarchical', list);
  }
  const others = members[host].filter((m) => m !== rank);
  const whole = (buf: 'input' | 'scratch') => slice(buf, 0, n * c);
  if (others.length === 0) list.copy(whole('input'), whole('scratch'));
  others.forEach((m, i) => {
    list.recvReduce(m, whole('scratch'), whole(i === 0 ? 'input' : 'scratch'));
  });
  const otherHosts = Array.from({ length: leaders.length - 1 }, (_, i) => mod(host + 1 + i, leaders.length));
  for (const g of otherHosts) for (const m of members[g]) list.send(leaders[g], acc(m));
  for (const g of otherHosts) for (const m of members[host]) list.recvReduce(leaders[g], acc(m), acc(m));
  for (const m of others) list.send(m, acc(m));
  list.copy(acc(rank), slice('output', 0, c));
  return singleChannel(shape, rank, 'hierarchical', list, n * c);
}
