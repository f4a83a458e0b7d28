import { type CallShape, COLLECTIVES, type Collective } from '../algorithms/schedule.js';
import { invalidArgument } from '../errors.js';
import type { TopologyGraph } from '../topology/topology-graph.js';
import { oneShotOffer } from '../exec/one-shot.js';
import { callCount, localMachine, machineTimeUs } from '../sim/machine-cost.js';
import { type Selection, selectAlgorithm } from './select.js';
import { LL_SLOT_BYTES } from '../transport/shm/mailbox.js';
import { TCP_ONE_SHOT_BYTES } from '../transport/tcp/tcp-low-latency.js';
import { isOversubscribed } from '../transport/wait.js';

/** What one message of each transport's one-shot path holds: the largest call it may carry. */
export const ONE_SHOT_CAPACITY: Readonly<Record<'shm' | 'tcp', number>> = {
  shm: LL_SLOT_BYTES,
  tcp: TCP_ONE_SHOT_BYTES,
};

export interface PredictRequest {
  readonly collective: string;
  /** The call's size as the root's input bytes, as the tuner sizes it (a broadcast's message, a scatter's whole input). */
  readonly bytes: number;
  readonly nranks: number;
  readonly elementBytes: number;
  readonly transport: 'shm' | 'tcp';
  readonly hostCount: number;
  readonly algorithm?: string;
  /** What one low-latency message holds, where the transport has the one-shot path (thread ranks, TCP). */
  readonly oneShotCapacity?: number;
  /** As the communicator sees it; else thread ranks are oversubscribed when the job's ranks outnumber the cores. */
  readonly oversubscribed?: boolean;
  /** The call is checksummed, or TSCCL_DEBUG_CHECK is on: see CallSelectionRequest. */
  readonly checksum?: boolean;
  readonly debugCheck?: boolean;
  /** The call in place: see PredictOnRequest. */
  readonly inPlace?: boolean;
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

export interface PredictOnRequest {
  readonly collective: Collective;
  /** The call's size as the root's input bytes: what the tuner sizes a call by. */
  readonly bytes: number;
  readonly elementBytes: number;
  readonly hostCount: number;
  readonly algorithm?: string;
  /** As the tuner sees the job (SelectionRequest): thread ranks or processes, more threads than cores. */
  readonly transport?: 'shm' | 'tcp';
  readonly oversubscribed?: boolean;
  /** What one low-latency slot holds, where the transport has them: the one-shot path is then a candidate. */
  readonly oneShotCapacity?: number;
  readonly checksum?: boolean;
  readonly debugCheck?: boolean;
  /** The call's input is its output (as PyTorch's all_reduce): its in-place schedules are ranked and priced. */
  readonly inPlace?: boolean;
  /**
   * Predict what a benchmark of this many back-to-back calls per rank reports (mean over ranks
   * of the time per call after the first), not one call on its own; default 1.
   */
  readonly calls?: number;
}

/** A call as the tuner's selection sees it: what execution and prediction both hand to selectForCall. */
export interface CallSelectionRequest {
  /** The call's shape: what the one-shot path would publish is measured on it. */
  readonly shape: CallShape;
  /** The call's size as the root's input bytes, the same on every rank. */
  readonly bytes: number;
  readonly elementBytes: number;
  readonly hostCount: number;
  readonly transport?: 'shm' | 'tcp';
  readonly oversubscribed?: boolean;
  /** An explicit choice (call option or TSCCL_ALGO). */
  readonly algorithm?: string;
  /** What one low-latency message holds, where the transport has the one-shot path. */
  readonly oneShotCapacity?: number;
  /** The call checksums its messages: the one-shot path's slots carry no checksum, so it is not offered. */
  readonly checksum?: boolean;
  /** TSCCL_DEBUG_CHECK: the desync check runs ahead of the schedule path only, so the one-shot path is not offered. */
  readonly debugCheck?: boolean;
  /** The machine thread ranks run on, as the simulator models it; asked for only where the cost model decides. */
  readonly machine?: () => TopologyGraph;
}

/**
 * The tuner's choice for one call: the one place that builds its selection request, used by the
 * communicator to run a call and by every prediction of what it runs, so the two cannot drift.
 */
export function selectForCall(request: CallSelectionRequest): Selection {
  const { shape, transport, hostCount, algorithm } = request;
  const capacity = request.oneShotCapacity;
  const oneShot =
    capacity === undefined || request.checksum === true || request.debugCheck === true
      ? undefined
      : oneShotOffer(shape, request.elementBytes, capacity);
  // Thread ranks share one machine, whose model decides among the candidates; a forced algorithm needs none.
  const machine = transport === 'shm' && hostCount === 1 && algorithm === undefined ? request.machine?.() : undefined;
  return selectAlgorithm({
    collective: shape.collective,
    nranks: shape.nranks,
    bytes: request.bytes,
    elementBytes: request.elementBytes,
    algorithm,
    hostCount,
    oneShot,
    transport,
    oversubscribed: request.oversubscribed,
    machine,
    inPlace: shape.inPlace,
  });
}

/**
 * What the tuner runs for a call on a machine whose ranks are the job's ranks (selectForCall on
 * a call of that size), and the call's element count.
 */
export function choiceOn(graph: TopologyGraph, request: PredictOnRequest): { selection: Selection; count: number } {
  const nranks = graph.accelerators.length;
  const count = callCount(request.collective, request.bytes, request.elementBytes, nranks);
  const shape: CallShape = {
    collective: request.collective,
    nranks,
    count,
    root: 0,
    inPlace: request.inPlace === true,
    chunkCount: 0,
  };
  const selection = selectForCall({
    shape,
    bytes: request.bytes,
    elementBytes: request.elementBytes,
    hostCount: request.hostCount,
    transport: request.transport,
    oversubscribed: request.oversubscribed,
    algorithm: request.algorithm,
    oneShotCapacity: request.oneShotCapacity,
    checksum: request.checksum,
    debugCheck: request.debugCheck,
    machine: () => graph,
  });
  return { selection, count };
}

/**
 * The tuner's choice for a call, run by the flow simulator on a topology whose ranks are the
 * job's ranks, with the executor's own chunking and the topology's own protocol: what a real
 * run would do, simulated. comm.predict and the prediction checks in bench/ all use this;
 * `tsccl sim` on CPU ranks runs the same choice.
 */
export function predictOn(
  graph: TopologyGraph,
  request: PredictOnRequest,
): { algorithm: string; chunkCount: number; timeUs: number } {
  const { selection, count } = choiceOn(graph, request);
  const timeUs = machineTimeUs(graph, {
    collective: request.collective,
    count,
    elementBytes: request.elementBytes,
    algorithm: selection.algorithm,
    chunkCount: selection.chunkCount,
    calls: request.calls,
    inPlace: request.inPlace,
  });
  return { algorithm: selection.algorithm, chunkCount: selection.chunkCount, timeUs };
}

/**
 * Predicts a call on this machine: predictOn over the local topology built from the
 * `tsccl tune` profile. Choice and prediction come from the same place, so they cannot
 * disagree about what runs.
 */
export function predictCall(request: PredictRequest): Prediction {
  const collective = COLLECTIVES.find((c) => c === request.collective);
  if (collective === undefined)
    throw invalidArgument(
      `predict: '${request.collective}' is not a collective: expected one of ${COLLECTIVES.join(', ')}`,
      { argument: 'collective' },
    );
  if (!Number.isInteger(request.bytes) || request.bytes < 0)
    throw invalidArgument(`predict: bytes must be a non-negative integer, got ${request.bytes}`, { argument: 'bytes' });
  const local = localMachine(request.nranks, request.transport);
  const predicted = predictOn(local.graph, {
    collective,
    bytes: request.bytes,
    elementBytes: request.elementBytes,
    hostCount: request.hostCount,
    transport: request.transport,
    oversubscribed: request.oversubscribed ?? (request.transport === 'shm' && isOversubscribed(request.nranks)),
    algorithm: request.algorithm,
    oneShotCapacity: request.oneShotCapacity,
    checksum: request.checksum,
    debugCheck: request.debugCheck,
    inPlace: request.inPlace,
  });
  return { collective, bytes: request.bytes, ...predicted, profile: local.profile };
}
