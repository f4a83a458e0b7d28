import type { Collective } from '../algorithms/schedule.js';
import { isChain } from './pipeline-chunks.js';
import { type SimOutcome, simulateFlows } from './flow-sim.js';
import { topologyProtocols } from './protocols.js';
import { workingSetSaturationBytes } from './working-set.js';
import { loadLocalTopology } from '../topology/load-topology.js';
import { TopologyGraph } from '../topology/topology-graph.js';

/** Collectives whose input holds one block per rank: the call's count is the input / ranks. */
const BLOCK_PER_RANK_INPUT = new Set<Collective>(['reduceScatter', 'scatter', 'allToAll']);

/** The CallShape count of a call the tuner sizes by the root's input bytes. */
export function callCount(collective: Collective, bytes: number, elementBytes: number, nranks: number): number {
  const elements = Math.floor(bytes / elementBytes);
  return BLOCK_PER_RANK_INPUT.has(collective) ? Math.floor(elements / nranks) : elements;
}

export interface MachineCall {
  readonly collective: Collective;
  readonly count: number;
  readonly elementBytes: number;
  readonly algorithm: string;
  readonly chunkCount: number;
  /** The executor's in-place schedules (SimCall.inPlace). */
  readonly inPlace?: boolean;
  /** Back-to-back calls per rank, as a benchmark times them (SimCall.calls); default 1. */
  readonly calls?: number;
}

/**
 * A call's time on a machine whose ranks are the job's ranks, by the flow simulator with the
 * executor's own chunking and the machine's own protocol (CPU topologies have one); with
 * `calls`, the time per call a benchmark of that many back-to-back calls reports.
 */
export function machineTimeUs(graph: TopologyGraph, call: MachineCall): number {
  return machineOutcome(graph, call).rankCallUs;
}

/**
 * A large call repeats the same pieces: the simulator's cost grows with them while the call's
 * time grows by the same step per piece once the pipeline is full. So a call of more than four times STAND_IN elements is read from the
 * line through two stand-ins of STAND_IN and twice as many, simulated with the call's own working
 * set (its memory speeds). A stand-in holds at least 4 pieces of every rank's slice, and at least
 * 64 MiB so that the rates that depend on a message's size (TCP's, and the whole-block messages of
 * the direct all-gather and broadcast) are those of the large call, unless that takes more than
 * STAND_IN_MAX_PIECES pieces: tiny pieces (TSCCL_CHUNK_BYTES=64) would make a simulation of
 * hundreds of thousands of steps, and 256 pieces already repeat one message size (docs/tuning.md).
 */
const STAND_IN_PIECES = 4;
const STAND_IN_MIN_BYTES = 64 << 20;
const STAND_IN_MAX_PIECES = 256;
/** A chain (ring broadcast or reduce) settles into its rhythm later where ranks outnumber the cores, so its stand-ins are longer (docs/tuning.md). */
const CHAIN_STAND_IN_PIECES = 8;

/** The whole flow simulation behind machineTimeUs: its time, and what each link carried. */
export function machineOutcome(graph: TopologyGraph, call: MachineCall): SimOutcome {
  const protocols = topologyProtocols(graph.topology);
  const protocol = Object.keys(protocols)[0];
  const unit = call.chunkCount * graph.accelerators.length;
  const pieces = isChain(call) ? CHAIN_STAND_IN_PIECES : STAND_IN_PIECES;
  const standIn =
    Math.max(pieces, Math.min(STAND_IN_MAX_PIECES, Math.ceil(STAND_IN_MIN_BYTES / call.elementBytes / unit))) * unit;
  if (call.count <= 4 * standIn)
    return simulateFlows(graph, graph.accelerators, { ...call, workingSetCount: call.count, root: 0, protocol });
  // Past the bytes where the machine's speeds stop depending on the working set, every larger call's stand-ins are the same two.
  const saturated = workingSetSaturationBytes(graph, protocols[protocol]) / call.elementBytes;
  const workingSetCount = Math.min(call.count, Math.max(2 * standIn, Math.ceil(saturated)));
  const simulate = (count: number) => standInOutcome(graph, { ...call, count }, { protocol, workingSetCount });
  const [small, large] = [standIn, 2 * standIn].map(simulate);
  const ahead = (call.count - 2 * standIn) / standIn;
  const extend = (a: number, b: number) => b + (b - a) * ahead;
  return {
    timeUs: extend(small.timeUs, large.timeUs),
    rankCallUs: extend(small.rankCallUs, large.rankCallUs),
    channels: large.channels,
    walkedChannels: large.walkedChannels,
    linkBytes: large.linkBytes.map((bytes, i) => extend(small.linkBytes[i], bytes)),
    capacities: Float64Array.from(large.capacities),
  };
}

/** Stand-in simulations per machine: every class past the machine's last cache tier repeats the same two. */
const standIns = new WeakMap<TopologyGraph, Map<string, SimOutcome>>();
const STAND_IN_MEMO_LIMIT = 1024;

function standInOutcome(
  graph: TopologyGraph,
  call: MachineCall,
  { protocol, workingSetCount }: { protocol: string; workingSetCount: number },
): SimOutcome {
  let known = standIns.get(graph);
  if (known === undefined) standIns.set(graph, (known = new Map()));
  const key = `${call.collective}|${call.algorithm}|${call.count}|${call.elementBytes}|${call.chunkCount}|${call.inPlace === true}|${call.calls ?? 1}|${protocol}|${workingSetCount}`;
  let outcome = known.get(key);
  if (outcome === undefined) {
    outcome = simulateFlows(graph, graph.accelerators, { ...call, workingSetCount, root: 0, protocol });
    if (known.size >= STAND_IN_MEMO_LIMIT) known.clear();
    known.set(key, outcome);
  }
  return outcome;
}

const machines = new Map<string, { graph: TopologyGraph; profile: string }>();

/**
 * This machine for `nranks` ranks as the simulator models it (`--topo local`): detection and
 * the `tsccl tune` profile (defaults when none), built once per rank count and transport.
 */
export function localMachine(nranks: number, transport: 'shm' | 'tcp'): { graph: TopologyGraph; profile: string } {
  const key = `${nranks}|${transport}`;
  let machine = machines.get(key);
  if (machine === undefined) {
    const { topology, profileSource } = loadLocalTopology(nranks, transport);
    machine = { graph: new TopologyGraph(topology), profile: profileSource };
    machines.set(key, machine);
  }
  return machine;
}
