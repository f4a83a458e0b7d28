import { type CallShape, type Schedule, StepList, hostLayout, mod, singleChannel, slice } from './schedule.js';

/**
 * Hierarchical all-gather: each host's leader gathers its ranks' blocks, the leaders exchange
 * their hosts' blocks directly (one stream per pair of hosts), and each leader sends the whole
 * result to its ranks.
 */
export function allGatherHierarchical(shape: CallShape, rank: number): Schedule {
  const { hostOf, members, leaders } = hostLayout(shape);
  const c = shape.count;
  const n = shape.nranks;
  const host = hostOf[rank];
  const leader = leaders[host];
  const block = (r: number) => slice('output', r * c, c);
  const list = new StepList();
  if (rank !== leader) {
    list.send(leader, slice('input', 0, c));
    list.recv(leader, slice('output', 0, n * c));
    return singleChannel(shape, rank, 'hierarchical', list);
  }
  const others = members[host].filter((m) => m !== rank);
  list.copy(slice('input', 0, c), block(rank));
  for (const m of others) list.recv(m, block(m));
  const otherHosts = Array.from({ length: leaders.length - 1 }, (_, i) => mod(host + 1 + i, leaders.length));
  for (const g of otherHosts) for (const m of members[host]) list.send(leaders[g], block(m));
  for (const g of otherHosts) for (const m of members[g]) list.recv(leaders[g], block(m));
  for (const m of others) list.send(m, slice('output', 0, n * c));
  return singleChannel(shape, rank, 'hierarchical', list);
}
