import { appendRingAllReduce } from './all-reduce-ring.js';
import { type CallShape, type Schedule, StepList, hostLayout, singleChannel, slice } from './schedule.js';

/**
 * Hierarchical all-reduce: ranks reduce into their host's leader, the leaders all-reduce around
 * a ring (one stream per host crosses the network), and each leader hands the result back to
 * its host. The result of every element is computed once, so all ranks agree bitwise.
 */
export function allReduceHierarchical(shape: CallShape, rank: number): Schedule {
  const { hostOf, members, leaders } = hostLayout(shape);
  const host = hostOf[rank];
  const leader = leaders[host];
  const all = (buf: 'input' | 'output') => slice(buf, 0, shape.count);
  const list = new StepList();
  if (rank !== leader) {
    list.send(leader, all('input'));
    list.recv(leader, all('output'));
    return singleChannel(shape, rank, 'hierarchical', list);
  }
  const others = members[host].filter((m) => m !== rank);
  if (others.length === 0) list.copy(all('input'), all('output'));
  others.forEach((m, i) => {
    list.recvReduce(m, all('output'), all(i === 0 ? 'input' : 'output'));
  });
  appendRingAllReduce(list, {
    ring: leaders,
    position: host,
    count: shape.count,
    chunkCount: shape.chunkCount,
    own: 'output',
  });
  for (const m of others) list.send(m, all('output'));
  return singleChannel(shape, rank, 'hierarchical', list);
}
