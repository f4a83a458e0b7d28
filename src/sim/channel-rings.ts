import type { TopologyGraph } from '../topology/topology-graph.js';
import { seededRandom } from '../seeded-random.js';

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
  const first = cyclesByHost[0][0];
  const bandwidths = {
    cycle: first.length > 1 ? graph.routeCapacity(graph.route(rankDevices[first[0]], rankDevices[first[1]])) : Infinity,
    nic:
      groups.length > 1
        ? graph.routeCapacity(graph.route(rankDevices[groups[0][0]], rankDevices[groups[1][0]]))
        : Infinity,
  };
  const channels = channelCount(
    Math.min(...cyclesByHost.map((c) => c.length)),
    groups.length > 1 ? nics.size : 1,
    bandwidths,
    maxChannels,
  );
  if (groups.length === 1)
    return Array.from({ length: channels }, (_, c) => cyclesByHost[0][c % cyclesByHost[0].length]);
  const shifts = entryShifts(graph, rankDevices, cyclesByHost[0], channels, nics.size);
  return Array.from({ length: channels }, (_, c) =>
    groups.flatMap((_members, h) => {
      const cycle = cyclesByHost[h][c % cyclesByHost[h].length];
      // Every other server walks the ring backwards, so a server is left by the GPU with the same
      // local index (the same rail NIC) as the one that enters the next: traffic between servers
      // stays on one rail.
      const order = cycle.map((_, i) => cycle[(i + shifts[c]) % cycle.length]);
      return h % 2 === 1 ? order.reverse() : order;
    }),
  );
}

/**
 * How many channels run rings over `cycles` link-disjoint cycles of a server and its `nics`
 * NICs (1 on one server), given a cycle link's and a NIC route's bandwidth. The call is cut
 * evenly over the channels, so the link of a cycle that ceil(channels / cycles) channels share,
 * and the NIC that ceil(channels / nics) share, are the busiest: the fewest channels that give
 * the slower of the two the least time. A switched server has one ring order, whose channels
 * all share the GPUs' switch ports however many there are: one channel per NIC. One server with
 * a mesh: one per cycle. A full mesh of 8 (7 cycles) with 8 NICs: 7 for MI300X, as 8 would put
 * two channels on one cycle's xGMI links, no faster than its NICs; 16 for Ascend 910B, whose
 * 23.5 GB/s ports then carry two each and its 44.8 GB/s HCCS links at most three. DGX-1 (6
 * cycles, 4 NICs): 4.
 */
export function channelCount(
  cycles: number,
  nics: number,
  bandwidths: { readonly cycle: number; readonly nic: number },
  maxChannels = 16,
): number {
  const slower = (channels: number) =>
    Math.max(
      Math.ceil(channels / cycles) / channels / bandwidths.cycle,
      Math.ceil(channels / nics) / channels / bandwidths.nic,
    );
  let best = 1;
  // Shares like 2/14 and 1/7 are the same time; rounding must not make 14 look faster.
  for (let channels = 2; channels <= maxChannels; channels++)
    if (slower(channels) < slower(best) * (1 - 1e-9)) best = channels;
  return best;
}

/**
 * Where each channel's ring enters a server (a rotation of its cycle), chosen so that the
 * channels spread evenly over the NICs: a ring enters a server by one GPU's NIC and leaves it
 * by its predecessor's, and no NIC may carry more than its even share of channels either way.
 * On a switch every channel takes the same order and rotating by c/channels of it does that; on
 * a mesh every channel has its own cycle, and the same rotation sent four of 2 x 8 MI300X's
 * eight channels through nic5 (a ring all-reduce at a quarter of the NICs' rate), and a greedy
 * pass still two through one. So a depth-first search over the rotations, the even one first,
 * with a work limit; past it, the rotations of the best partial assignment and the even one.
 */
function entryShifts(
  graph: TopologyGraph,
  rankDevices: readonly number[],
  cycles: readonly number[][],
  channels: number,
  nics: number,
): number[] {
  const nicOf = (rank: number) => graph.devices[rankDevices[rank]].nic ?? '';
  const cap = Math.ceil(channels / nics);
  const entering = new Map<string, number>();
  const leaving = new Map<string, number>();
  const shifts: number[] = [];
  let best: number[] = [];
  let budget = 100_000;
  const place = (c: number): boolean => {
    if (c === channels) return true;
    const cycle = cycles[c % cycles.length];
    const k = cycle.length;
    const even = Math.floor((c * k) / channels);
    for (let t = 0; t < k && --budget > 0; t++) {
      const shift = (even + t) % k;
      const enter = nicOf(cycle[shift]);
      const leave = nicOf(cycle[(shift + k - 1) % k]);
      if ((entering.get(enter) ?? 0) >= cap || (leaving.get(leave) ?? 0) >= cap) continue;
      entering.set(enter, (entering.get(enter) ?? 0) + 1);
      leaving.set(leave, (leaving.get(leave) ?? 0) + 1);
      shifts.push(shift);
      if (shifts.length > best.length) best = [...shifts];
      if (place(c + 1)) return true;
      shifts.pop();
      entering.set(enter, entering.get(enter)! - 1);
      leaving.set(leave, leaving.get(leave)! - 1);
    }
    return false;
  };
  if (place(0)) return shifts;
  return Array.from(
    { length: channels },
    (_, c) => best[c] ?? Math.floor((c * cycles[c % cycles.length].length) / channels),
  );
}

/**
 * Directed Hamiltonian cycles through the members using only direct links, as many as the
 * links allow (a bundle of k links can carry k rings); the members in rank order when the
 * server has no direct links (a switch makes every order equal).
 */
function meshCycles(graph: TopologyGraph, rankDevices: readonly number[], members: readonly number[]): number[][] {
  const k = members.length;
  if (k <= 2) return [[...members]];
  const residual: number[][] = members.map((a) =>
    members.map((b) => {
      if (a === b) return 0;
      const route = graph.route(rankDevices[a], rankDevices[b]);
      return route.length === 1 ? graph.link(route[0]).count : 0;
    }),
  );
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
    const next = [...Array(k).keys()]
      .filter((j) => !used[j] && residual[at][j] > 0)
      .map((j) => ({ j, key: residual[at][j] + (random === undefined ? 0 : random()) }))
      .sort((x, y) => y.key - x.key)
      .map((e) => e.j);
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
