import { algorithmNames } from '../algorithms/registry.js';
import type { Collective } from '../algorithms/schedule.js';
import { BENCH_OPS, type BenchOpName } from '../bench/bench-ops.js';
import { invalidArgument } from '../errors.js';
import type { TopologyGraph } from '../topology/topology-graph.js';
import { analyticalTime } from './analytical.js';
import { type SimCall, reducingSwitch, simulateFlows } from './flow-sim.js';
import { topologyProtocols } from './protocols.js';

export type SimMode = 'flow' | 'analytical';

export interface SimRequest {
  readonly op: BenchOpName;
  /** The nccl-tests size of the row (bytes). */
  readonly bytes: number;
  /** An algorithm name, or undefined to take the fastest predicted. */
  readonly algorithm?: string;
  readonly protocols?: readonly string[];
  readonly mode: SimMode;
  /** Allow in-switch reduction (NVLS) where the topology has it. */
  readonly nvls: boolean;
  readonly elementBytes: number;
  readonly root: number;
}

export interface LinkLoad {
  /** Index of the directed link in the topology graph. */
  readonly index: number;
  readonly link: string;
  readonly kind: string;
  /** Bytes carried / (capacity x call time): 1 means busy the whole call. */
  readonly utilisation: number;
  readonly bytes: number;
}

export interface SimRow {
  readonly op: BenchOpName;
  readonly bytes: number;
  readonly count: number;
  readonly timeUs: number;
  readonly algbwGBs: number;
  readonly busbwGBs: number;
  readonly algorithm: string;
  readonly protocol: string;
  readonly channels: number;
  readonly mode: SimMode;
  readonly reduces: boolean;
  readonly root: number;
  readonly ranks: number;
  /** The link class bounding the bandwidth term in the analytical model. */
  readonly bound: string;
  /** The busiest link, when the flow engine ran (the analytical mode names a link class). */
  readonly bottleneck: LinkLoad | undefined;
  readonly links: readonly LinkLoad[];
}

/** Above this many ranks, the flow engine runs only the candidate the analytical model ranks first. */
const FLOW_SEARCH_RANKS = 64;
/** Algorithms whose traffic grows as n^2 messages, left out of automatic choice on large jobs. */
const QUADRATIC = new Set(['direct']);

/** The algorithms the simulator may run for a collective on these ranks. */
export function simAlgorithms(graph: TopologyGraph, rankDevices: readonly number[], collective: Collective, nvls: boolean): string[] {
  const names = algorithmNames(collective).filter((a) => a !== 'hierarchical' || new Set(rankDevices.map((d) => graph.devices[d].host)).size > 1);
  if (collective === 'allReduce' && nvls && reducingSwitch(graph, rankDevices) !== undefined) names.push('nvls');
  return names;
}

/** NCCL runs NVLS with the Simple protocol only (multimem loads and stores are bulk operations). */
function protocolsFor(algorithm: string, protocols: readonly string[]): readonly string[] {
  if (algorithm !== 'nvls') return protocols;
  if (!protocols.includes('Simple')) throw invalidArgument('nvls runs with the Simple protocol only: add Simple to --proto', { argument: '--proto' });
  return ['Simple'];
}

/** Predicts one nccl-tests row on the topology. */
export function simulateRow(graph: TopologyGraph, rankDevices: readonly number[], request: SimRequest): SimRow {
  const op = BENCH_OPS[request.op];
  const collective = op.collective;
  if (collective === undefined) throw invalidArgument('sendrecv is not simulated: use all_to_all or a collective', { argument: '--op' });
  const n = rankDevices.length;
  const eb = request.elementBytes;
  const counts = op.counts(Math.floor(request.bytes / eb), n);
  const shapeCount = collective === 'allGather' || collective === 'gather' ? counts.send
    : collective === 'reduceScatter' || collective === 'scatter' ? counts.recv
      : collective === 'allToAll' ? counts.param : counts.send;
  const valid = simAlgorithms(graph, rankDevices, collective, request.nvls);
  let algorithms: string[];
  if (request.algorithm === undefined) {
    algorithms = n > FLOW_SEARCH_RANKS ? valid.filter((a) => !QUADRATIC.has(a)) : valid;
  } else {
    if (!valid.includes(request.algorithm)) {
      throw invalidArgument(`--algo ${request.algorithm} is not available for ${request.op} on this topology: expected one of ${valid.join(', ')}`, { argument: '--algo' });
    }
    algorithms = [request.algorithm];
  }
  const protocols = request.protocols ?? Object.keys(topologyProtocols(graph.topology));
  const candidates = algorithms.flatMap((algorithm) => protocolsFor(algorithm, protocols).map((protocol): SimCall => ({
    collective, count: shapeCount, elementBytes: eb, root: request.root, algorithm, protocol,
  })));
  const ranked = candidates.map((call) => ({ call, estimate: analyticalTime(graph, rankDevices, call) })).sort((a, b) => a.estimate.timeUs - b.estimate.timeUs);
  let best: { call: SimCall; timeUs: number; channels: number; bound: string; linkBytes?: Float64Array } | undefined;
  if (request.mode === 'analytical') {
    best = { call: ranked[0].call, ...ranked[0].estimate };
  } else {
    const toRun = n > FLOW_SEARCH_RANKS ? ranked.slice(0, 1) : ranked;
    for (const { call, estimate } of toRun) {
      const outcome = simulateFlows(graph, rankDevices, call);
      if (best === undefined || outcome.timeUs < best.timeUs) best = { call, bound: estimate.bound, ...outcome };
    }
  }
  const chosen = best!;
  const timeUs = chosen.timeUs;
  const algbwGBs = counts.algorithm * eb / timeUs / 1e3;
  const links = chosen.linkBytes === undefined ? [] : linkLoads(graph, chosen.linkBytes, timeUs);
  return {
    op: request.op, bytes: counts.algorithm * eb, count: counts.param, timeUs, algbwGBs, busbwGBs: algbwGBs * op.busFactor(n),
    algorithm: chosen.call.algorithm, protocol: chosen.call.protocol, channels: chosen.channels, mode: request.mode,
    reduces: op.reduces, root: request.root, ranks: n, bound: chosen.bound, bottleneck: links[0], links,
  };
}

/** Links that carried traffic, busiest first. */
export function linkLoads(graph: TopologyGraph, linkBytes: Float64Array, timeUs: number): LinkLoad[] {
  const loads: LinkLoad[] = [];
  linkBytes.forEach((bytes, i) => {
    if (bytes <= 0) return;
    const link = graph.link(i);
    loads.push({ index: i, link: graph.linkName(i), kind: link.kind, bytes, utilisation: bytes / (link.capacity * timeUs) });
  });
  return loads.sort((a, b) => b.utilisation - a.utilisation);
}

/**
 * A point-to-point exchange between two ranks (pipeline neighbours sending activations one way
 * and gradients the other), `bytes` each way: a 2-rank all-to-all moves exactly that.
 */
export function simulateExchange(graph: TopologyGraph, pair: readonly number[], bytes: number, options: { mode: SimMode; elementBytes: number }): SimRow {
  return simulateRow(graph, pair.slice(0, 2), { op: 'alltoall', bytes: bytes * 2, mode: options.mode, nvls: false, elementBytes: options.elementBytes, root: 0 });
}
