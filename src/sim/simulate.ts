import { algorithmNames } from '../algorithms/registry.js';
import { type CallShape, type Collective, bufferCounts } from '../algorithms/schedule.js';
import { BENCH_OPS, type BenchCounts, type BenchOpName } from '../algorithms/bench-ops.js';
import { invalidArgument } from '../errors.js';
import type { TopologyGraph } from '../topology/topology-graph.js';
import { machineOutcome } from './machine-cost.js';
import { analyticalTime } from './analytical.js';
import { libraryAlgorithms, libraryFixedChoice } from './libraries.js';
import { awsAllReduceChoice } from './aws-region-tuner.js';
import { awsPlatformOf, ncclGraphs } from './nccl-graphs.js';
import { type NcclGraphs, ncclChoice } from './nccl-tuner.js';
import { libraryChannelCount } from './library-channels.js';
import { SHIFT, sendRecvShift } from './send-recv-shift.js';
import { NvlsTreeLayout, type SimCall, reducingSwitch, simulateFlows } from './flow-sim.js';
import { SWITCH_ALGORITHMS } from './nvls-flows.js';
import type { FlowWatch } from './sim-call.js';
import { type Protocol, topologyProtocols } from './protocols.js';

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
  /** What tsccl's tuner runs for a call; needed where the ranks run tsccl itself (CPU cores). */
  readonly chooser?: TscclChooser;
  /**
   * The call's input is its output. Ranks that run tsccl then rank and run its in-place
   * schedules; an accelerator library's in-place call costs what its out-of-place one does.
   */
  readonly inPlace?: boolean;
  /** The flow engine's progress over the row's candidates, and its deadline (FlowBudgetExceeded past it). */
  readonly watch?: FlowWatch;
}

/** A call on ranks that run tsccl, as the simulator asks the tuner about it. */
export interface TscclCall {
  readonly collective: Collective;
  /** The call's size as the root's input bytes, as the tuner sizes it. */
  readonly bytes: number;
  readonly elementBytes: number;
  readonly hostCount: number;
  readonly transport: 'shm' | 'tcp';
  readonly oversubscribed: boolean;
  readonly algorithm?: string;
  readonly inPlace?: boolean;
}

/**
 * The tuner's choice for a call on a machine whose ranks are the job's ranks, and the call's
 * element count. Handed in (tuner/sim-chooser.ts) so that the simulator, which the tuner's cost
 * model is built on, does not import the tuner.
 */
export type TscclChooser = (
  graph: TopologyGraph,
  call: TscclCall,
) => { algorithm: string; chunkCount: number; count: number };

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
/**
 * Algorithms whose traffic grows as n^2 messages where others' grows as n, left out of automatic
 * choice on large jobs. Every all-to-all sends n^2 messages, so there direct costs the flow
 * engine no more than pairwise (512 ranks: 26 s against 38).
 */
const isQuadratic = (collective: Collective, algorithm: string) => algorithm === 'direct' && collective !== 'allToAll';

/** How many hosts the ranks are spread over. */
function hostCountOf(graph: TopologyGraph, rankDevices: readonly number[]): number {
  return new Set(rankDevices.map((d) => graph.devices[d].host ?? 0)).size;
}

/** The algorithms the simulator may run for a collective on these ranks. */
export function simAlgorithms(
  graph: TopologyGraph,
  rankDevices: readonly number[],
  collective: Collective,
  nvls: boolean,
): string[] {
  const names = algorithmNames(collective).filter((a) => a !== 'hierarchical' || hostCountOf(graph, rankDevices) > 1);
  if (collective === 'allReduce' && nvls && reducingSwitch(graph, rankDevices) !== undefined) names.push('nvls');
  if (collective === 'allReduce' && nvls && NvlsTreeLayout.of(graph, rankDevices) !== undefined)
    names.push('nvls_tree');
  return names;
}

/**
 * NCCL runs NVLS with the Simple protocol only (multimem loads and stores are bulk operations).
 * Where the protocols asked for leave it out, NVLS is no candidate, unless it was asked for by name.
 */
function protocolsFor(algorithm: string, protocols: readonly string[], named: boolean): readonly string[] {
  if (!SWITCH_ALGORITHMS.has(algorithm)) return protocols;
  if (protocols.includes('Simple')) return ['Simple'];
  if (named)
    throw invalidArgument(`${algorithm} runs with the Simple protocol only: add Simple to --proto`, {
      argument: '--proto',
    });
  return [];
}

/** The watch of candidate `k` of `of`: its progress reported as its share of the row's. */
function watchPart(watch: FlowWatch | undefined, k: number, of: number): { watch?: FlowWatch } {
  if (watch === undefined) return {};
  const { progress } = watch;
  return {
    watch: {
      ...(watch.deadlineMs === undefined ? {} : { deadlineMs: watch.deadlineMs }),
      ...(watch.clock === undefined ? {} : { clock: watch.clock }),
      ...(progress === undefined ? {} : { progress: (fraction: number) => progress((k + fraction) / of) }),
    },
  };
}

/** The element count a collective's schedules are generated for (CallShape's), from an op's counts. */
function shapeCountOf(collective: Collective, counts: BenchCounts): number {
  if (collective === 'reduceScatter' || collective === 'scatter') return counts.recv;
  if (collective === 'allToAll') return counts.param;
  return counts.send;
}

/** The call simulateRow runs on the flow engine for one algorithm and protocol of a collective's row (accelerator ranks). */
export function flowCallOf(
  request: { op: BenchOpName; bytes: number; root: number; ranks: number },
  choice: { algorithm: string; protocol: string },
): SimCall {
  const { algorithm, protocol } = choice;
  const collective = BENCH_OPS[request.op].collective;
  if (collective === undefined)
    throw invalidArgument(`${request.op} is point-to-point, no collective`, { argument: '--op' });
  const counts = BENCH_OPS[request.op].counts(Math.floor(request.bytes / 4), request.ranks);
  return {
    collective,
    count: shapeCountOf(collective, counts),
    elementBytes: 4,
    root: request.root,
    algorithm,
    protocol,
  };
}

/**
 * The graphs of NCCL's search (nccl-graphs.ts) where its own cost model picks an all-reduce among
 * `valid`: across NVSwitch servers of an NCCL topology; undefined elsewhere.
 */
function ncclChooserGraphs(
  graph: TopologyGraph,
  rankDevices: readonly number[],
  collective: string,
  valid: readonly string[],
): NcclGraphs | undefined {
  return graph.topology.library === 'nccl' && collective === 'allReduce'
    ? ncclGraphs(graph, rankDevices, valid.includes('nvls_tree'))
    : undefined;
}

/**
 * What the network plugin's own tuner runs for this call, where it decides: AWS's on P5, P5e and
 * P5en nodes (aws-region-tuner.ts); undefined elsewhere, where the library's own choice stands.
 */
function pluginTunerChoice(
  graph: TopologyGraph,
  rankDevices: readonly number[],
  collective: Collective,
  bytes: number,
  offered: { algorithms: readonly string[]; protocols: readonly string[] },
): { algorithm: string; protocol: string } | undefined {
  if (collective !== 'allReduce') return undefined;
  const aws = awsPlatformOf(graph, rankDevices);
  return aws === undefined
    ? undefined
    : awsAllReduceChoice(aws.platform, { bytes, ranks: rankDevices.length, nodes: aws.nodes }, offered);
}

/** Whether an all-reduce left to choose on these ranks runs what AWS's tuner picks (its platforms, more than two nodes). */
export function choosesAsAws(graph: TopologyGraph, rankDevices: readonly number[]): boolean {
  return (awsPlatformOf(graph, rankDevices)?.nodes ?? 0) > 2;
}

/** Whether an all-reduce left to choose on these ranks runs what NCCL's own cost model picks. */
export function choosesAsNccl(graph: TopologyGraph, rankDevices: readonly number[], nvls: boolean): boolean {
  const valid = simAlgorithms(graph, rankDevices, 'allReduce', nvls);
  return ncclChooserGraphs(graph, rankDevices, 'allReduce', valid) !== undefined;
}

/** Predicts one nccl-tests row on the topology. */
export function simulateRow(graph: TopologyGraph, rankDevices: readonly number[], request: SimRequest): SimRow {
  const op = BENCH_OPS[request.op];
  const collective = op.collective;
  if (collective === undefined) return simulateSendRecv(graph, rankDevices, request);
  const n = rankDevices.length;
  const eb = request.elementBytes;
  const counts = op.counts(Math.floor(request.bytes / eb), n);
  const shapeCount = shapeCountOf(collective, counts);
  const ranksRunTsccl = request.mode === 'flow' ? tscclTransport(graph, rankDevices) : undefined;
  if (ranksRunTsccl !== undefined)
    return rowOf(
      request,
      n,
      counts,
      tscclRun(graph, rankDevices, request, { collective, count: shapeCount, ...ranksRunTsccl }),
    );
  const valid = simAlgorithms(graph, rankDevices, collective, request.nvls);
  const protocols = request.protocols ?? Object.keys(topologyProtocols(graph.topology));
  const library = graph.topology.library;
  let algorithms: string[];
  let fixed: { algorithm: string; protocol: string } | undefined;
  if (request.algorithm === undefined) {
    // What the accelerators' library would run, as published measurements are of it.
    const hosts = hostCountOf(graph, rankDevices);
    fixed = libraryFixedChoice(library, collective, { ranks: n, hosts, count: shapeCount, bytes: shapeCount * eb });
    if (fixed !== undefined && (!valid.includes(fixed.algorithm) || !protocols.includes(fixed.protocol)))
      fixed = undefined;
    fixed ??= pluginTunerChoice(graph, rankDevices, collective, shapeCount * eb, { algorithms: valid, protocols });
    const candidates = fixed !== undefined ? [fixed.algorithm] : libraryAlgorithms(library, collective, valid);
    algorithms = n > FLOW_SEARCH_RANKS ? candidates.filter((a) => !isQuadratic(collective, a)) : candidates;
  } else {
    if (!valid.includes(request.algorithm)) {
      throw invalidArgument(
        `--algo ${request.algorithm} is not available for ${request.op} on this topology: expected one of ${valid.join(', ')}`,
        { argument: '--algo' },
      );
    }
    algorithms = [request.algorithm];
  }
  const offered = algorithms.flatMap((algorithm) =>
    (fixed !== undefined ? [fixed.protocol] : protocolsFor(algorithm, protocols, request.algorithm !== undefined)).map(
      (protocol): SimCall => ({
        collective,
        count: shapeCount,
        elementBytes: eb,
        root: request.root,
        algorithm,
        protocol,
      }),
    ),
  );
  // Where NCCL's cost model can be replayed, NCCL runs what that model rates fastest among the
  // protocols allowed (as under NCCL_PROTO).
  const ncclModel =
    request.algorithm === undefined ? ncclChooserGraphs(graph, rankDevices, collective, valid) : undefined;
  const ncclPick = ncclModel === undefined ? undefined : ncclChoice(ncclModel, offered, shapeCount * eb);
  const candidates = ncclPick === undefined ? offered : [ncclPick];
  const ranked = candidates
    .map((call) => ({ call, estimate: analyticalTime(graph, rankDevices, call) }))
    .sort((a, b) => a.estimate.timeUs - b.estimate.timeUs);
  let best:
    | {
        call: SimCall;
        timeUs: number;
        channels: number;
        bound: string;
        linkBytes?: Float64Array;
        capacities?: Float64Array;
      }
    | undefined;
  if (request.mode === 'analytical') {
    best = { call: ranked[0].call, ...ranked[0].estimate };
  } else {
    const toRun = n > FLOW_SEARCH_RANKS ? ranked.slice(0, 1) : ranked;
    for (const [k, { call, estimate }] of toRun.entries()) {
      const outcome = simulateFlows(graph, rankDevices, { ...call, ...watchPart(request.watch, k, toRun.length) });
      if (best === undefined || outcome.timeUs < best.timeUs) best = { call, bound: estimate.bound, ...outcome };
    }
  }
  const chosen = best!;
  // The analytical model moves no flows; the flow engine reports bytes and capacities together.
  const links =
    chosen.linkBytes === undefined || chosen.capacities === undefined
      ? []
      : linkLoads(graph, chosen.linkBytes, chosen.timeUs, chosen.capacities);
  const libraryChannels = libraryChannelCount(graph, rankDevices, { ...chosen.call, nranks: n });
  return rowOf(request, n, counts, {
    timeUs: chosen.timeUs,
    algorithm: chosen.call.algorithm,
    protocol: chosen.call.protocol,
    channels: libraryChannels ?? chosen.channels,
    bound: chosen.bound,
    links,
  });
}

/**
 * nccl-tests' sendrecv: every rank sends the row's bytes to the next rank and receives the
 * previous rank's at once. It moves like an all-to-all's blocks (so its call says allToAll for
 * the memory model of CPU hosts); its schedule is the shift, on every kind of topology.
 */
function simulateSendRecv(graph: TopologyGraph, rankDevices: readonly number[], request: SimRequest): SimRow {
  if (request.algorithm !== undefined && request.algorithm !== SHIFT) {
    throw invalidArgument(
      `--algo ${request.algorithm} does not apply to sendrecv: its pattern is ${SHIFT} (each rank sends to the next)`,
      { argument: '--algo' },
    );
  }
  const counts = BENCH_OPS.sendrecv.counts(Math.floor(request.bytes / request.elementBytes), rankDevices.length);
  const protocols = request.protocols ?? Object.keys(topologyProtocols(graph.topology));
  let best: SimRun | undefined;
  for (const protocol of protocols) {
    const call: SimCall = {
      collective: 'allToAll',
      count: counts.send,
      elementBytes: request.elementBytes,
      root: 0,
      algorithm: SHIFT,
      protocol,
      generator: sendRecvShift,
    };
    const estimate = analyticalTime(graph, rankDevices, call);
    let run: SimRun;
    if (request.mode === 'analytical') {
      run = { timeUs: estimate.timeUs, algorithm: SHIFT, protocol, channels: 1, bound: estimate.bound, links: [] };
    } else {
      const outcome = simulateFlows(graph, rankDevices, { ...call, ...watchPart(request.watch, 0, 1) });
      run = {
        timeUs: outcome.timeUs,
        algorithm: SHIFT,
        protocol,
        channels: outcome.channels,
        bound: estimate.bound,
        links: linkLoads(graph, outcome.linkBytes, outcome.timeUs, outcome.capacities),
      };
    }
    if (best === undefined || run.timeUs < best.timeUs) best = run;
  }
  return rowOf(request, rankDevices.length, counts, best!);
}

/** What a simulation of a call gives a row; the rest comes from the op. */
type SimRun = Pick<SimRow, 'timeUs' | 'algorithm' | 'protocol' | 'channels' | 'bound' | 'links'>;

/** The nccl-tests row of a simulated call: sizes and bandwidths from its op and `counts` (the op's, for the request), the rest as simulated. */
function rowOf(request: SimRequest, n: number, counts: BenchCounts, run: SimRun): SimRow {
  const op = BENCH_OPS[request.op];
  const algbwGBs = (counts.algorithm * request.elementBytes) / run.timeUs / 1e3;
  return {
    ...run,
    op: request.op,
    bytes: counts.algorithm * request.elementBytes,
    count: counts.param,
    algbwGBs,
    busbwGBs: algbwGBs * op.busFactor(n),
    mode: request.mode,
    reduces: op.reduces,
    root: request.root,
    ranks: n,
    bottleneck: run.links[0],
  };
}

/** Do these ranks run tsccl itself (CPU cores: this machine, an emulated cluster), so that a row is its tuner's choice? */
export function ranksRunTsccl(graph: TopologyGraph, rankDevices: readonly number[]): boolean {
  return tscclTransport(graph, rankDevices) !== undefined;
}

/**
 * How a real run reaches the ranks, where they are CPU cores running tsccl itself (`--topo
 * local`, an emulated cluster's file) and the job is all of them: thread ranks pull their
 * messages, process ranks pay a per-message overhead at both ends (the topology's one protocol
 * says which), with that protocol. Undefined for accelerators, which a GPU library's choices model.
 */
function tscclTransport(
  graph: TopologyGraph,
  rankDevices: readonly number[],
): { transport: 'shm' | 'tcp'; protocol: Protocol } | undefined {
  const protocols = Object.values(topologyProtocols(graph.topology));
  if (protocols.length !== 1 || rankDevices.length !== graph.accelerators.length) return undefined;
  const [protocol] = protocols;
  const transport = protocol.pull === true ? 'shm' : protocol.overheadUs !== undefined ? 'tcp' : undefined;
  return transport === undefined ? undefined : { transport, protocol };
}

/**
 * A call on ranks that run tsccl: what its tuner would run there (the one-shot path where the
 * transport has it, the executor's chunking, the measured rules of process ranks), simulated as
 * comm.predict simulates it, so the table names the algorithm `tsccl bench` records on that
 * machine and the time comm.predict gives for it. The sim's own search over GPU algorithms and
 * protocols would pick and time calls no tsccl run makes.
 */
function tscclRun(
  graph: TopologyGraph,
  rankDevices: readonly number[],
  request: SimRequest,
  call: { collective: Collective; count: number; transport: 'shm' | 'tcp'; protocol: Protocol },
): SimRun {
  const n = rankDevices.length;
  const { protocol } = call;
  const shape: CallShape = {
    collective: call.collective,
    nranks: n,
    count: call.count,
    root: 0,
    inPlace: false,
    chunkCount: 0,
  };
  if (request.chooser === undefined) {
    throw invalidArgument(
      `Simulating ranks that run tsccl (${graph.topology.name}) needs the tuner's choice: pass a chooser (tuner/sim-chooser.ts)`,
      { argument: 'chooser' },
    );
  }
  const { algorithm, chunkCount, count } = request.chooser(graph, {
    collective: call.collective,
    bytes: bufferCounts(shape, 0).input * request.elementBytes,
    elementBytes: request.elementBytes,
    hostCount: hostCountOf(graph, rankDevices),
    transport: call.transport,
    oversubscribed: call.transport === 'shm' && n > (protocol.rankCores ?? n),
    ...(request.algorithm === undefined ? {} : { algorithm: request.algorithm }),
    inPlace: request.inPlace,
  });
  const outcome = machineOutcome(graph, {
    collective: call.collective,
    count,
    elementBytes: request.elementBytes,
    algorithm,
    chunkCount,
    inPlace: request.inPlace,
  });
  const links = linkLoads(graph, outcome.linkBytes, outcome.rankCallUs, outcome.capacities);
  return {
    timeUs: outcome.rankCallUs,
    algorithm,
    protocol: protocol.name,
    channels: outcome.channels,
    bound: links[0]?.kind ?? 'latency',
    links,
  };
}

/** Links that carried traffic, busiest first, each against its capacity in the call (SimOutcome.capacities). */
export function linkLoads(
  graph: TopologyGraph,
  linkBytes: Float64Array,
  timeUs: number,
  capacities: Float64Array,
): LinkLoad[] {
  const loads: LinkLoad[] = [];
  linkBytes.forEach((bytes, i) => {
    if (bytes <= 0) return;
    loads.push({
      index: i,
      link: graph.linkName(i),
      kind: graph.link(i).kind,
      bytes,
      utilisation: bytes / (capacities[i] * timeUs),
    });
  });
  return loads.sort((a, b) => b.utilisation - a.utilisation);
}

/** A link's load with the ids of the devices at its two ends, as the page and `sim links` name them. */
export function withEnds(
  graph: TopologyGraph,
  load: LinkLoad,
): LinkLoad & { readonly from: string; readonly to: string } {
  const link = graph.link(load.index);
  return { ...load, from: graph.devices[link.from].id, to: graph.devices[link.to].id };
}

/**
 * A point-to-point exchange between two ranks (pipeline neighbours sending activations one way
 * and gradients the other), `bytes` each way: a 2-rank all-to-all moves exactly that.
 */
export function simulateExchange(
  graph: TopologyGraph,
  pair: readonly number[],
  bytes: number,
  options: { mode: SimMode; elementBytes: number; chooser?: TscclChooser },
): SimRow {
  return simulateRow(graph, pair.slice(0, 2), {
    op: 'alltoall',
    bytes: bytes * 2,
    mode: options.mode,
    nvls: false,
    elementBytes: options.elementBytes,
    root: 0,
    chooser: options.chooser,
  });
}
