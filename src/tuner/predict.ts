import { COLLECTIVES, type Collective } from '../algorithms/schedule.js';
import { invalidArgument } from '../errors.js';
import { simulateFlows } from '../sim/flow-sim.js';
import { loadLocalTopology } from '../topology/load-topology.js';
import { TopologyGraph } from '../topology/topology-graph.js';
import { selectAlgorithm } from './select.js';

export interface PredictRequest {
  readonly collective: string;
  /** This rank's input bytes, as the call would pass them. */
  readonly bytes: number;
  readonly nranks: number;
  readonly elementBytes: number;
  readonly transport: 'shm' | 'tcp';
  readonly hostCount: number;
  readonly algorithm?: string;
}

export interface Prediction {
  readonly collective: Collective;
  readonly bytes: number;
  /** What the tuner would run for this call, and how it would chunk it. */
  readonly algorithm: string;
  readonly chunkCount: number;
  /** Predicted time of the call on this machine, microseconds. */
  readonly timeUs: number;
  /** Where the machine's figures came from: a `tsccl tune` profile or the defaults. */
  readonly profile: string;
}

const graphs = new Map<string, { graph: TopologyGraph; profile: string }>();

/**
 * Predicts a call on this machine: the tuner's choice for it, run by the flow simulator on the
 * local topology built from the `tsccl tune` profile. Choice and prediction come from the same
 * place, so they cannot disagree about what runs.
 */
export function predictCall(request: PredictRequest): Prediction {
  const collective = COLLECTIVES.find((c) => c === request.collective);
  if (collective === undefined) throw invalidArgument(`predict: '${request.collective}' is not a collective: expected one of ${COLLECTIVES.join(', ')}`, { argument: 'collective' });
  if (!Number.isInteger(request.bytes) || request.bytes < 0) throw invalidArgument(`predict: bytes must be a non-negative integer, got ${request.bytes}`, { argument: 'bytes' });
  const selection = selectAlgorithm({
    collective, nranks: request.nranks, bytes: request.bytes, elementBytes: request.elementBytes, hostCount: request.hostCount,
    ...(request.algorithm === undefined ? {} : { algorithm: request.algorithm }),
  });
  const key = `${request.nranks}|${request.transport}`;
  let local = graphs.get(key);
  if (local === undefined) {
    const { topology, profileSource } = loadLocalTopology(request.nranks, request.transport);
    local = { graph: new TopologyGraph(topology), profile: profileSource };
    graphs.set(key, local);
  }
  const { graph } = local;
  const outcome = simulateFlows(graph, graph.accelerators, {
    collective, count: Math.floor(request.bytes / request.elementBytes), elementBytes: request.elementBytes, root: 0,
    algorithm: selection.algorithm, protocol: request.transport, chunkCount: selection.chunkCount,
  });
  return { collective, bytes: request.bytes, algorithm: selection.algorithm, chunkCount: selection.chunkCount, timeUs: outcome.timeUs, profile: local.profile };
}
