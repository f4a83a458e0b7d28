import type { Collective } from '../algorithms/schedule.js';
import { type SimOutcome, simulateFlows } from '../sim/flow-sim.js';
import { topologyProtocols } from '../sim/protocols.js';
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

/** The whole flow simulation behind machineTimeUs: its time, and what each link carried. */
export function machineOutcome(graph: TopologyGraph, call: MachineCall): SimOutcome {
  return simulateFlows(graph, graph.accelerators, {
    ...call, root: 0, protocol: Object.keys(topologyProtocols(graph.topology))[0],
  });
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
