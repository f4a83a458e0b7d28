import type { TopologyGraph } from '../topology/topology-graph.js';

/**
 * Ring orders for the simulator's channels, found in the topology the way NCCL searches its
 * rings: inside a server, follow direct links (NVLink, xGMI, HCCS) so every hop is one link, and
 * use several rings with different links when the server is a mesh; between servers, rotate
 * each ring so that each channel leaves and enters a server through a different NIC. Each ring
 * is a permutation of ranks: position i of the ring holds rank order[i].
 */
export function channelRings(graph: TopologyGraph, rankDevices: readonly number[], maxChannels = 16): number[][] {
  const hosts = new Map<number, number[]>();
  rankDevices.forEach((device, rank) => {
    const host = graph.devices[device].host ?? 0;
    if (!hosts.has(host)) hosts.set(host, []);
    hosts.get(host)!.push(rank);
  });
  const groups = [...hosts.values()];
  const cyclesByHost = groups.map((members) => meshCycles(graph, rankDevices, members));
  const nics = new Set(groups[0].map((r) => graph.devices[rankDevices[r]].nic ?? ''));
  const wanted = Math.max(...cyclesByHost.map((c) => c.length), groups.length > 1 ? nics.size : 1);
  const channels = Math.max(1, Math.min(maxChannels, wanted));
  return Array.from({ length: channels }, (_, c) => groups.flatMap((members, h) => {
    const cycles = cyclesByHost[h];
    const cycle = cycles[c % cycles.length];
    if (groups.length === 1) return cycle;
    // Each channel enters its servers at a different GPU. Every other server walks the ring
    // backwards, so a server is left by the GPU with the same local index (the same rail
    // NIC) as the one that enters the next: traffic between servers stays on one rail.
    const shift = Math.floor((c * cycle.length) / channels);
    const order = cycle.map((_, i) => cycle[(i + shift) % cycle.length]);
    return h % 2 === 1 ? order.reverse() : order;
  }));
}

/**
 * Directed Hamiltonian cycles through the members using only direct links, as many as the
 * links allow (a bundle of k links can carry k rings); the members in rank order when the
 * server has no direct links (a switch makes every order equal).
 */
function meshCycles(graph: TopologyGraph, rankDevices: readonly number[], members: readonly number[]): number[][] {
  const k = members.length;
  if (k <= 2) return [[...members]];
  const residual: number[][] = members.map((a) => members.map((b) => {
    if (a === b) return 0;
    const route = graph.route(rankDevices[a], rankDevices[b]);
    return route.length === 1 ? graph.link(route[0]).count : 0;
  }));
  if (residual.every((row) => row.every((v) => v === 0))) return [[...members]];
  const maxDegree = Math.max(...residual.map((row) => row.reduce((a, v) => a + v, 0)));
  // Greedy extraction can strand arcs (a full mesh of 8 has 7 arc-disjoint rings, which a plain
  // greedy search misses), so retry with seeded random orders and keep the most rings.
  let best: number[][] = [];
  const random = seededRandom(k * 7919 + maxDegree);
  for (let attempt = 0; attempt < 64 && best.length < maxDegree; attempt++) {
    const left = residual.map((row) => [...row]);
    const cycles: number[][] = [];
    for (;;) {
      const cycle = findCycle(left, k, attempt === 0 ? undefined : random);
      if (cycle === undefined) break;
      for (let i = 0; i < k; i++) left[cycle[i]][cycle[(i + 1) % k]]--;
      cycles.push(cycle.map((i) => members[i]));
    }
    if (cycles.length > best.length) best = cycles;
  }
  return best.length > 0 ? best : [[...members]];
}

/** A small deterministic generator (mulberry32), so ring search gives the same rings every run. */
function seededRandom(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** A Hamiltonian cycle over arcs with residual > 0, by depth-first search with a work limit. */
function findCycle(residual: readonly number[][], k: number, random?: () => number): number[] | undefined {
  const path = [0];
  const used = new Uint8Array(k);
  used[0] = 1;
  let budget = 20_000;
  const extend = (): boolean => {
    if (--budget < 0) return false;
    const at = path[path.length - 1];
    if (path.length === k) return residual[at][0] > 0;
    // Prefer the arcs with the most residual links, so rings spread over bundles evenly.
    const next = [...Array(k).keys()].filter((j) => !used[j] && residual[at][j] > 0)
      .map((j) => ({ j, key: residual[at][j] + (random === undefined ? 0 : random()) }))
      .sort((x, y) => y.key - x.key).map((e) => e.j);
    for (const j of next) {
      used[j] = 1;
      path.push(j);
      if (extend()) return true;
      path.pop();
      used[j] = 0;
    }
    return false;
  };
  return extend() ? path : undefined;
}
