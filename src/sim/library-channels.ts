import type { Collective } from '../algorithms/schedule.js';
import { SWITCH_KINDS } from '../topology/catalog.js';
import type { TopologyGraph } from '../topology/topology-graph.js';
import { NvlsTreeLayout } from './nvls-tree-layout.js';
import { reducingSwitch } from './reducing-switch.js';

/**
 * NCCL's bytes a thread must have before a call takes one more channel, by protocol; a ring's LL
 * threshold grows with the ranks (NCCL's tuning.cc; its init log prints them as threadThresholds,
 * e.g. "8/8/64 | 64/8/64" for trees and rings of 8 ranks in NVIDIA/nccl#892).
 */
const THREAD_THRESHOLD: Readonly<Record<string, number>> = { LL: 8, LL128: 8, Simple: 64 };
/** Threads of a channel at the start of NCCL's size rule, by protocol (NCCL's *_MAX_NTHREADS). */
const MAX_THREADS: Readonly<Record<string, number>> = { LL: 512, LL128: 640, Simple: 512 };

/** Collectives whose NCCL byte count is every rank's part: the call's count times the ranks. */
const ALL_PARTS = new Set<Collective>(['allGather', 'reduceScatter']);

export interface ChannelCall {
  readonly collective: Collective;
  readonly algorithm: string;
  readonly protocol: string;
  /** The call's elements as a shape counts them (per rank for all-gather and reduce-scatter). */
  readonly count: number;
  readonly elementBytes: number;
  readonly nranks: number;
}

/**
 * How many channels the library runs a call on, where the machine says what it sets up: NVLS on
 * the switch's own (at most the ring channels where those are known), its tree across servers on
 * the switch's tree channels; rings and trees start
 * from all the topology's channels and drop one at a time while the call's bytes would leave a
 * channel's threads less than the protocol's threshold each, keeping at least one (NCCL's
 * enqueue.cc, topoGetAlgoInfo). Undefined where the machine does not say, or for an algorithm
 * the library does not run.
 */
export function libraryChannelCount(
  graph: TopologyGraph,
  rankDevices: readonly number[],
  call: ChannelCall,
): number | undefined {
  const channels = graph.topology.libraryChannels;
  if (call.algorithm === 'nvls') {
    const reducing = reducingSwitch(graph, rankDevices);
    if (reducing === undefined) return undefined;
    const nvls = SWITCH_KINDS[graph.devices[reducing].switchKind!].reductionChannels;
    return channels === undefined ? nvls : Math.min(nvls, channels);
  }
  if (call.algorithm === 'nvls_tree') return NvlsTreeLayout.of(graph, rankDevices)?.channels;
  if (channels === undefined || (call.algorithm !== 'ring' && call.algorithm !== 'tree')) return undefined;
  const threads = MAX_THREADS[call.protocol];
  const perThread = THREAD_THRESHOLD[call.protocol];
  if (threads === undefined || perThread === undefined) return undefined;
  const threshold = call.algorithm === 'ring' && call.protocol === 'LL' ? perThread * call.nranks : perThread;
  const bytes = call.count * call.elementBytes * (ALL_PARTS.has(call.collective) ? call.nranks : 1);
  let nc = channels;
  while (nc > 1 && bytes < nc * threads * threshold) nc--;
  return nc;
}
