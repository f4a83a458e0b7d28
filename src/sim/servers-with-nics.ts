import type { TopologyGraph } from '../topology/topology-graph.js';

/**
 * The ranks of each host, in rank order, where every rank has a NIC and the hosts hold as many
 * ranks each; undefined otherwise, and on one host: the servers NCCL's algorithms across nodes
 * (its trees, its NVLS tree) see.
 */
export function serversWithNics(graph: TopologyGraph, rankDevices: readonly number[]): number[][] | undefined {
  const hosts = new Map<number, number[]>();
  for (const device of rankDevices) {
    if (graph.devices[device].nic === undefined) return undefined;
    const host = graph.devices[device].host ?? 0;
    const group = hosts.get(host);
    if (group === undefined) hosts.set(host, [device]);
    else group.push(device);
  }
  const groups = [...hosts.values()];
  if (groups.length < 2 || groups.some((g) => g.length !== groups[0].length)) return undefined;
  return groups;
}

/** The first of `ranks` on each NIC, in rank order: where NCCL's channels leave a server. */
export function nicHeads(graph: TopologyGraph, ranks: readonly number[]): number[] {
  const nics = new Set<string>();
  return ranks.filter((d) => {
    const nic = graph.devices[d].nic!;
    if (nics.has(nic)) return false;
    nics.add(nic);
    return true;
  });
}
