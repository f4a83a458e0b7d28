import type { Collective } from '../algorithms/schedule.js';
import type { LocalProfile } from '../topology/local-profile.js';
import { type LocalDetection, localTopology } from '../topology/local-topology.js';
import { TopologyGraph } from '../topology/topology-graph.js';
import { ONE_SHOT_CAPACITY, predictOn } from '../tuner/predict.js';

/** A call of thread ranks as `tsccl tune` timed it: back-to-back calls, the mean time per call. */
export interface TimedCall {
  readonly collective: Collective;
  readonly ranks: number;
  /** The call's size as the tuner sizes it (the root's input bytes). */
  readonly bytes: number;
  readonly algorithm: string;
  readonly calls: number;
  readonly timeUs: number;
}

/** The simulator's time for a timed call of thread ranks on this machine with `profile`. */
export function simulateTimed(profile: LocalProfile, detection: LocalDetection, timed: TimedCall): number {
  const graph = new TopologyGraph(localTopology({ ranks: timed.ranks, transport: 'shm', profile, detection }));
  return predictOn(graph, {
    collective: timed.collective,
    bytes: timed.bytes,
    elementBytes: 4,
    hostCount: 1,
    algorithm: timed.algorithm,
    transport: 'shm',
    oversubscribed: timed.ranks > detection.cores,
    calls: timed.calls,
    oneShotCapacity: ONE_SHOT_CAPACITY.shm,
  }).timeUs;
}
