import { busiestDoubleTreeDegree } from '../algorithms/in-order-binary-tree.js';
import { REDUCING_COLLECTIVES, pieceRoundCount } from '../algorithms/schedule.js';
import { SWITCH_KINDS, type SwitchKind } from '../topology/catalog.js';
import type { TopologyGraph } from '../topology/topology-graph.js';
import { NvlsTreeLayout, type SimCall, reducingSwitch } from './flow-sim.js';
import { nvlsFillUs, nvlsSaturatedUs } from './nvls-pipeline.js';
import { channelCount } from './channel-rings.js';
import { isChain, pipelineChunkCount } from './pipeline-chunks.js';
import { protocolOf } from './protocols.js';
import { SHIFT } from './send-recv-shift.js';

/**
 * The analytical (alpha-beta) model: each algorithm's time as steps x per-step latency plus
 * bytes over the bandwidth of the link class that bounds it, from a summary of the topology
 * taken once (two routes, not n^2). It is what makes 100,000 ranks answerable in well under a
 * second, and what ranks candidates before the flow engine runs the best. It follows the flow
 * engine's conventions (channels, protocols, pipelining chunks) so the two agree on
 * uncontended patterns; only the flow engine sees contention between concurrent flows.
 */
export interface TopologySummary {
  readonly n: number;
  readonly hosts: number;
  /** Ranks on the largest host. */
  readonly perHost: number;
  /** Scale-up bandwidth out of one accelerator (bytes/us, all its links). */
  readonly upBandwidth: number;
  /** Bandwidth between two accelerators of a host along their route (bytes/us). */
  readonly pairBandwidth: number;
  /** True when accelerators of a host have direct links to each other (a mesh). */
  readonly mesh: boolean;
  readonly intraLatency: number;
  readonly interLatency: number;
  /** One NIC's path bandwidth between hosts (bytes/us). */
  readonly nicBandwidth: number;
  readonly nicsPerHost: number;
  /** The kind of the switch that can reduce for all these ranks (flow-sim's reducingSwitch), if any. */
  readonly reducingSwitch: SwitchKind | undefined;
  /** Where NCCL's NVLS tree can run, its layout over the servers (nvls-tree-layout.ts). */
  readonly nvlsTree: NvlsTreeLayout | undefined;
  /** Bytes per microsecond a rank reduces at when reduction is not fused (CPU ranks); 0 if fused. */
  readonly reduceRate: number;
  /**
   * Microseconds per byte when every rank of a host sends a block to every other at once: the
   * link the most of those routes cross, over its capacity. On a switch that is a rank's port
   * (k-1 routes), on a full mesh one direct link (1 route), on a partial mesh (DGX-1) or behind
   * PCIe switches the shared path between sockets or switches that the routes without a direct
   * link all take.
   */
  readonly allPairsUsPerByte: number;
  /** Likewise when one rank (the first) sends to every other of its host, and when every other sends to it. */
  readonly fanOutUsPerByte: number;
  readonly fanInUsPerByte: number;
}

/** The most microseconds per byte any link spends when each of these routes moves one byte at once. */
function busiestLinkUsPerByte(graph: TopologyGraph, routes: readonly Int32Array[]): number {
  const crossings = new Map<number, number>();
  for (const route of routes) for (const link of route) crossings.set(link, (crossings.get(link) ?? 0) + 1);
  let busiest = 0;
  for (const [link, count] of crossings) busiest = Math.max(busiest, count / graph.capacities[link]);
  return busiest;
}

/**
 * What one NIC's worth of ranks moves between hosts when every rank of a host sends to and
 * receives from its counterpart on another host at once: the route's own capacity where the
 * NICs bind, less where the two ways share a directed link (messages staged in host memory
 * without GPUDirect RDMA cross the PCIe between switch and CPU twice, and the CPU's memory).
 */
function networkBandwidth(
  graph: TopologyGraph,
  rankDevices: readonly number[],
  hostOf: (r: number) => number,
  interPath: Int32Array,
): number {
  const direct = graph.routeCapacity(interPath);
  const home = rankDevices.map((_, r) => r).filter((r) => hostOf(r) === hostOf(0));
  const away = rankDevices.map((_, r) => r).filter((r) => hostOf(r) !== hostOf(0));
  const pairs = home.slice(0, away.length).map((r, i) => [rankDevices[r], rankDevices[away[i]]] as const);
  const routes = pairs.flatMap(([a, b]) => [graph.route(a, b), graph.route(b, a)]);
  const nics = new Set(pairs.map(([a]) => graph.devices[a].nic ?? '')).size;
  // Per NIC: the ranks' share of the busiest link, times the ranks each NIC carries.
  const shared = (1 / busiestLinkUsPerByte(graph, routes)) * (pairs.length / Math.max(1, nics));
  return Math.min(direct, shared);
}

/** Per graph, per rank list (the same array is passed for every candidate of a call). */
const summaries = new WeakMap<TopologyGraph, WeakMap<readonly number[], TopologySummary>>();

export function summarize(graph: TopologyGraph, rankDevices: readonly number[]): TopologySummary {
  let byRanks = summaries.get(graph);
  if (byRanks === undefined) {
    byRanks = new WeakMap();
    summaries.set(graph, byRanks);
  }
  const cached = byRanks.get(rankDevices);
  if (cached !== undefined) return cached;
  const hostOf = (r: number) => graph.devices[rankDevices[r]].host ?? 0;
  const hostCounts = new Map<number, number>();
  rankDevices.forEach((_, r) => {
    hostCounts.set(hostOf(r), (hostCounts.get(hostOf(r)) ?? 0) + 1);
  });
  const first = rankDevices[0];
  const sameHost = rankDevices.findIndex((_, r) => r > 0 && hostOf(r) === hostOf(0));
  const otherHost = rankDevices.findIndex((_, r) => hostOf(r) !== hostOf(0));
  const upLinks = graph.linksFrom(first).filter((l) => l.family === 'scale-up');
  const intraPath = sameHost > 0 ? graph.route(first, rankDevices[sameHost]) : undefined;
  const interPath = otherHost > 0 ? graph.route(first, rankDevices[otherHost]) : undefined;
  const hostZero = rankDevices.filter((_, r) => hostOf(r) === hostOf(0));
  const routesAmong = (sources: readonly number[], targets: readonly number[]) =>
    sources.flatMap((a) => targets.filter((b) => b !== a).map((b) => graph.route(a, b)));
  const sw = reducingSwitch(graph, rankDevices);
  // Accelerators without scale-up links (PCIe servers) reach each other through shared paths:
  // switch uplinks, the link between sockets, and where peer-to-peer is off the memory of the CPU
  // each message is staged in. A ring moves at the busiest of those when every rank sends to its
  // successor, not at one route's pace. (CPU ranks keep one route's: their cores are priced apart.)
  const pcieRing =
    upLinks.length === 0 && graph.devices[first].kind !== 'core' && hostZero.length > 1
      ? 1 /
        busiestLinkUsPerByte(
          graph,
          hostZero.map((d, i) => graph.route(d, hostZero[(i + 1) % hostZero.length])),
        )
      : undefined;
  const summary: TopologySummary = {
    n: rankDevices.length,
    hosts: hostCounts.size,
    perHost: Math.max(...hostCounts.values()),
    upBandwidth:
      upLinks.length > 0
        ? upLinks.reduce((a, l) => a + l.capacity, 0)
        : (pcieRing ?? (intraPath ? graph.routeCapacity(intraPath) : Infinity)),
    pairBandwidth: intraPath ? graph.routeCapacity(intraPath) : Infinity,
    mesh: intraPath !== undefined && intraPath.length === 1,
    intraLatency: intraPath ? graph.routeLatency(intraPath) : 0,
    interLatency: interPath ? graph.routeLatency(interPath) : 0,
    nicBandwidth: interPath ? networkBandwidth(graph, rankDevices, hostOf, interPath) : Infinity,
    nicsPerHost: new Set(hostZero.map((d) => graph.devices[d].nic ?? '')).size,
    reduceRate: (graph.devices[first].reduceGBps ?? 0) * 1000,
    reducingSwitch: sw === undefined ? undefined : SWITCH_KINDS[graph.devices[sw].switchKind!],
    nvlsTree: NvlsTreeLayout.of(graph, rankDevices),
    allPairsUsPerByte: busiestLinkUsPerByte(graph, routesAmong(hostZero, hostZero)),
    fanOutUsPerByte: busiestLinkUsPerByte(graph, routesAmong([first], hostZero)),
    fanInUsPerByte: busiestLinkUsPerByte(graph, routesAmong(hostZero.slice(1), [first])),
  };
  byRanks.set(rankDevices, summary);
  return summary;
}

export interface Estimate {
  readonly timeUs: number;
  readonly channels: number;
  /** The link class that bounds the bandwidth term. */
  readonly bound: 'scale-up' | 'network' | 'latency';
}

export function analyticalTime(graph: TopologyGraph, rankDevices: readonly number[], call: SimCall): Estimate {
  const s = summarize(graph, rankDevices);
  const p = protocolOf(graph.topology, call.protocol);
  const n = s.n;
  const k = s.perHost;
  const multi = s.hosts > 1;
  const aIntra = s.intraLatency + p.stepUs;
  const aInter = s.interLatency + p.stepUs + p.netStepUs;
  const wire = (bytes: number) => bytes / p.efficiency;
  const bytes = call.count * call.elementBytes;
  const log2n = Math.ceil(Math.log2(Math.max(n, 1)));
  // Levels of a tree over the hosts (binomial, or NCCL's binary tree): the hops a piece takes
  // between hosts on its way down.
  const hostLevels = Math.ceil(Math.log2(Math.max(s.hosts, 1)));
  // Pipelining rounds of a segment, chunked as the flow engine chunks the schedule.
  const rounds = (segmentCount: number) => pieceRoundCount(segmentCount, pipelineChunkCount(call, call.count));
  // What binds: the lower of two bandwidths, or the longer of two times.
  const bound = (up: number, net: number): Estimate['bound'] => (net < up ? 'network' : 'scale-up');
  const longer = (upUs: number, netUs: number): Estimate['bound'] => (netUs > upUs ? 'network' : 'scale-up');
  const reduceUs = s.reduceRate > 0 ? reducedBytes(call, n, s.perHost) / s.reduceRate : 0;
  // CPU ranks reduce in the same pass that reads the peer's data, so reduction overlaps the transfer.
  const result = (timeUs: number, channels: number, b: Estimate['bound']): Estimate => ({
    timeUs: p.baseUs + Math.max(timeUs, reduceUs),
    channels,
    bound: b,
  });
  // A call with nothing to move (an all-gather of 8 bytes over 16 ranks has 0 per rank) costs its
  // launch; an all-to-all still exchanges its empty blocks, which carry the counts to check.
  if (n === 1 || (call.count === 0 && call.collective !== 'allToAll')) return result(0, 1, 'latency');
  // A NIC's share for each rank when all the ranks of a host cross at once (fewer NICs than ranks).
  const nicPerRank = s.nicBandwidth * Math.min(1, s.nicsPerHost / k);
  // A network step costs aInter; on a ring, steps that cross hosts are hosts/n of all steps.
  const stepLatency = (steps: number) => steps * aIntra + (multi ? (steps * s.hosts) / n : 0) * (aInter - aIntra);
  // The flow engine runs rings and trees on the same channels (channel-rings.ts): each
  // channel's share of the NICs, and its share of the call cut into pieces as the flow engine
  // cuts it, on its own.
  // A full mesh of k has k-1 link-disjoint cycles, a switched server one ring order; channels
  // that share a cycle share its links.
  const cycles = s.mesh ? Math.max(1, k - 1) : 1;
  const ringChannels = channelCount(cycles, multi ? s.nicsPerHost : 1, { cycle: s.pairBandwidth, nic: s.nicBandwidth });
  // The busiest link of a cycle, and the busiest NIC, carry a whole channel's share for each of
  // the channels that share them.
  const meshPerChannel = s.pairBandwidth / Math.ceil(ringChannels / cycles);
  const interPerChannel = multi ? s.nicBandwidth / Math.ceil(ringChannels / s.nicsPerHost) : Infinity;
  const channelPieces = (): { r: number; piece: number } => {
    const share = Math.ceil(call.count / ringChannels);
    const r = pieceRoundCount(share, pipelineChunkCount(call, share));
    return { r, piece: wire(bytes / (ringChannels * r)) };
  };
  switch (call.algorithm) {
    case 'tree': {
      // Each channel's share goes up and down a chain of k ranks in every host and a binary tree
      // of h hosts, in r pieces: per piece a rank sends one piece up and one down over its
      // scale-up links, and a host's leader through its NIC one per tree neighbour (its parent
      // and up to two child hosts). Latency: each way, k-1 chain hops and ceil(log2 h) network hops.
      const channels = ringChannels;
      const { r, piece } = channelPieces();
      const intraPerChannel = s.mesh ? meshPerChannel : s.upBandwidth / channels;
      // Tree neighbours a host's NIC serves per piece, averaged over NCCL's two trees, which run
      // on copies of the same channels (flow-sim.ts): 1 on two hosts, 2 from four on.
      const neighbours = busiestDoubleTreeDegree(s.hosts) / 2;
      // Behind a switch, with a channel per rank of the host, each channel's chain starts at
      // another rank (channel-rings.ts), so every rank heads one chain and ends one: it sends
      // 2(k-1)/k pieces a round, not 2, and a piece filling the chain meets few other channels'
      // pieces on a rank's switch port, so it crosses at the port's whole speed.
      const rotated = !s.mesh && channels >= k;
      const sendsPerRound = rotated ? (2 * (k - 1)) / k : 2;
      const fillHopUs = rotated ? piece / s.upBandwidth : piece / intraPerChannel;
      const intraStage = k > 1 ? (sendsPerRound * piece) / intraPerChannel : 0;
      const interStage = neighbours > 0 ? (neighbours * piece) / interPerChannel : 0;
      const latency = 2 * ((k - 1) * aIntra + hostLevels * aInter);
      const fill = 2 * ((k - 1) * fillHopUs + hostLevels * (piece / interPerChannel));
      // Priced as one tree per channel whose host neighbours are the two trees' average; the
      // flow engine runs the two copies (2 x channels).
      return result(
        latency + (r - 1) * Math.max(intraStage, interStage) + fill,
        2 * channels,
        longer(intraStage, interStage),
      );
    }
    case 'ring': {
      const channels = ringChannels;
      // Every channel's ring crosses hosts on `hosts` of its n hops, where a rank sends to a NIC,
      // not over its scale-up links: those carry the other hops of all the channels.
      const intraHops = multi ? (n - s.hosts) / n : 1;
      const intraPerChannel = s.mesh ? meshPerChannel : s.upBandwidth / (channels * intraHops);
      const perChannel = Math.min(intraPerChannel, interPerChannel);
      // A piece that meets no other channel on a hop (filling a chain, or going round a ring
      // whose NICs are its slowest hops) crosses it at this rate: a whole port behind a switch,
      // where the channels' rings start at different ranks; its cycle's share on a mesh.
      const lonePieceRate = s.mesh ? intraPerChannel : s.upBandwidth;
      if (isChain(call)) {
        // Each channel streams its share in r pieces along a chain of n-1 hops, hosts-1 of them
        // between hosts: the pieces leave at the slowest hop's pace, and the last one then
        // crosses every hop, each at its own speed. Behind a switch the channels' chains start
        // at different ranks, so a piece filling one meets few others on a rank's port and
        // crosses at the port's speed, as on the ring below.
        const { r, piece } = channelPieces();
        const crossings = s.hosts - 1;
        const fill = (n - 1 - crossings) * (piece / lonePieceRate) + crossings * (piece / interPerChannel);
        return result(
          stepLatency(n - 1) + (r - 1) * (piece / perChannel) + fill,
          channels,
          bound(intraPerChannel, interPerChannel),
        );
      }
      const steps = call.collective === 'allReduce' ? 2 * (n - 1) : n - 1;
      const piece = call.collective === 'allReduce' ? bytes / n : bytes;
      const channelPiece = wire(piece / channels);
      if (multi && interPerChannel < intraPerChannel) {
        // Across servers with the NICs slowest, the hops inside a server deliver a channel's next
        // piece before its NIC hop has sent the last, so the NIC streams back to back and the
        // steps' latencies are paid on the faster hops' slack: the call takes the longer of the
        // NIC's stream and one piece's way around the ring (each hop's latency, and its transfer
        // at the speed of a port the other channels are not using at that moment). On one server
        // every hop is alike and every step waits its latency (below), as C1 measures.
        const hopUs = channelPiece / lonePieceRate;
        return result(
          Math.max(steps * (channelPiece / interPerChannel), stepLatency(steps) + steps * hopUs),
          channels,
          'network',
        );
      }
      return result(
        stepLatency(steps) + (steps * channelPiece) / perChannel,
        channels,
        bound(intraPerChannel, interPerChannel),
      );
    }
    case 'direct': {
      // Every rank sends `block` bytes to each peer at once (the root alone, for a broadcast).
      // An all-reduce does that twice, with blocks of 1/n, and each of its rounds waits for the
      // round it reduces; the other collectives stream their pieces to each peer back to back,
      // so the route's latency is paid once.
      const reducing = call.collective === 'allReduce';
      const block = reducing ? bytes / n : bytes;
      const senders = call.collective === 'broadcast' ? 1 : k;
      // A block to every peer of the host at once (from the root alone, for a broadcast): the
      // link the most of those transfers share bounds them.
      const intra = wire(block) * (call.collective === 'broadcast' ? s.fanOutUsPerByte : s.allPairsUsPerByte);
      // A rank's traffic to other hosts leaves through its own NIC: a broadcast's root has one.
      const inter = multi ? wire(senders * (n - k) * block) / (s.nicBandwidth * Math.min(senders, s.nicsPerHost)) : 0;
      const latency = multi ? aInter : aIntra;
      const timeUs = reducing
        ? 2 * (rounds(Math.ceil(call.count / n)) * latency + Math.max(intra, inter))
        : latency + Math.max(intra, inter);
      return result(timeUs, 1, longer(intra, inter));
    }
    case 'nvls': {
      // As the flow engine charges it: two traversals, the pipeline's fill, one drain; no per-step sync.
      const sw = s.reducingSwitch;
      if (sw === undefined) throw new Error('nvls needs ranks attached to a switch that reduces');
      const rate = s.upBandwidth * sw.reductionEfficiency;
      const drain = Math.max(wire(bytes * (1 + 1 / n)) / rate, nvlsSaturatedUs(wire(bytes), n, rate));
      return result(2 * s.intraLatency + nvlsFillUs(bytes, n, sw, rate) + drain, 1, 'scale-up');
    }
    case 'nvls_tree': {
      // As the flow engine charges it: NVLS on each server and the heads' NIC traffic streamed
      // at once, NVLS's fill and traversals, and the tree's fill over the network.
      const tree = s.nvlsTree;
      if (tree === undefined) {
        throw new Error('nvls_tree needs two or more servers whose ranks attach to switches that reduce and have NICs');
      }
      const sw = tree.switchKind;
      const rate = s.upBandwidth * sw.reductionEfficiency;
      const k = tree.perServer;
      const up = Math.max(wire(bytes * (1 + 1 / k)) / rate, nvlsSaturatedUs(wire(bytes), k, rate));
      const across = (tree.busiestNeighbours * wire(bytes / tree.heads / 2)) / s.nicBandwidth;
      const fill = tree.fillUs(bytes, s.interLatency + p.netStepUs, s.nicBandwidth);
      return result(
        2 * s.intraLatency + nvlsFillUs(bytes, k, sw, rate) + Math.max(up, across) + fill,
        1,
        longer(up, across),
      );
    }
    case 'hierarchical': {
      // One leader per host gathers (or reduces) its host's data, the leaders exchange theirs
      // through their own NICs, and each leader hands its ranks the result.
      const leaders = s.hosts;
      const up = (b: number) => wire((k - 1) * b) / s.upBandwidth;
      const nic = (b: number) => wire(b) / s.nicBandwidth;
      switch (call.collective) {
        case 'allGather':
        case 'reduceScatter': {
          // A rank's block is `bytes`; the whole result is n of them. All-gather gathers blocks
          // and hands out the whole; reduce-scatter collects wholes and hands out blocks.
          const [into, outOf] = call.collective === 'allGather' ? [bytes, n * bytes] : [n * bytes, bytes];
          const across = leaders > 1 ? aInter + nic((leaders - 1) * k * bytes) : 0;
          return result(2 * aIntra + up(into) + across + up(outOf), 1, longer(up(into) + up(outOf), across));
        }
        case 'broadcast': {
          // Pipelined: each piece crosses a binomial tree of leaders, and every leader passes it
          // to its ranks; the root's leader sends to the most children.
          const r = rounds(call.count);
          const piece = bytes / r;
          const stage = Math.max(hostLevels * nic(piece), up(piece));
          return result(
            aIntra + hostLevels * aInter + (r - 1) * stage + hostLevels * nic(piece) + up(piece),
            1,
            longer(up(piece), hostLevels * nic(piece)),
          );
        }
        default: {
          const local = up(bytes);
          const across = leaders > 1 ? 2 * (leaders - 1) * (aInter + nic(bytes / leaders)) : 0;
          return result(2 * (aIntra + local) + across, 1, longer(local, across));
        }
      }
    }
    case 'binomial_tree': {
      // Pipelined pieces: the root hands each piece to its log2(n) children, all through its
      // scale-up links on a switch (each over its own link on a mesh) and, across hosts, to
      // log2(hosts) of them through its one NIC; a piece then descends the levels, those
      // between hosts at the network's latency and speed.
      const r = rounds(call.count);
      const piece = wire(bytes / r);
      const intraLevels = log2n - hostLevels;
      const intraStage = s.mesh ? piece / s.pairBandwidth : (intraLevels * piece) / s.upBandwidth;
      const interStage = (hostLevels * piece) / s.nicBandwidth;
      const descent = intraLevels * (aIntra + piece / s.pairBandwidth) + hostLevels * (aInter + piece / s.nicBandwidth);
      return result((r - 1) * Math.max(intraStage, interStage) + descent, 1, longer(intraStage, interStage));
    }
    case 'pairwise': {
      // Every step waits for its slowest exchange, and across hosts every step has one that
      // crosses (the ranks at a host's edge), so each step moves a block at a NIC's pace.
      const link = Math.min(s.pairBandwidth, multi ? nicPerRank : Infinity);
      return result(
        (n - 1) * ((multi ? aInter : aIntra) + wire(bytes) / link),
        1,
        bound(s.pairBandwidth, multi ? nicPerRank : Infinity),
      );
    }
    case 'linear': {
      // The root's peers on its host come (or, scattered, go) over the scale-up paths, the
      // others through its one NIC.
      const local = wire(bytes) * (call.collective === 'gather' ? s.fanInUsPerByte : s.fanOutUsPerByte);
      const remote = multi ? wire((n - k) * bytes) / s.nicBandwidth : 0;
      return result((multi ? aInter : aIntra) + Math.max(local, remote), 1, longer(local, remote));
    }
    case 'recursive_doubling': {
      // Partners within log2(ranks per host) of each other share a host; the other steps cross.
      const inter = multi ? Math.max(0, log2n - Math.ceil(Math.log2(Math.max(k, 1)))) : 0;
      const intraSteps = log2n - inter;
      return result(
        intraSteps * (aIntra + wire(bytes) / s.pairBandwidth) + inter * (aInter + wire(bytes) / nicPerRank),
        1,
        'latency',
      );
    }
    case SHIFT: {
      // Every rank sends its buffer to the next at once: the slowest neighbour pair bounds it,
      // which across hosts is the pair that crosses through its NICs.
      const link = Math.min(s.pairBandwidth, multi ? s.nicBandwidth : Infinity);
      return result(
        (multi ? aInter : aIntra) + wire(bytes) / link,
        1,
        bound(s.pairBandwidth, multi ? s.nicBandwidth : Infinity),
      );
    }
    case 'dissemination':
      return result(log2n * (multi ? aInter : aIntra), 1, 'latency');
    default:
      throw new Error(`no analytical model for algorithm ${call.algorithm}`);
  }
}

/** Bytes one rank reduces on the critical path, for ranks that reduce on their own cores. */
function reducedBytes(call: SimCall, n: number, perHost: number): number {
  if (!REDUCING_COLLECTIVES.has(call.collective)) return 0;
  const bytes = call.count * call.elementBytes;
  const log2n = Math.ceil(Math.log2(Math.max(n, 1)));
  switch (call.algorithm) {
    case 'ring':
      return call.collective === 'reduceScatter' ? (n - 1) * bytes : ((n - 1) / n) * bytes;
    case 'direct':
      return ((n - 1) / n) * bytes;
    case 'recursive_doubling':
    case 'binomial_tree':
      return log2n * bytes;
    case 'hierarchical':
      return (perHost - 1) * bytes;
    default:
      return 0;
  }
}
