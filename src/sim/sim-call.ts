import type { Collective, ScheduleGenerator } from '../algorithms/schedule.js';

/** One collective call as the flow simulator runs it. */
export interface SimCall {
  readonly collective: Collective;
  /** Elements per rank as CallShape counts them (per peer for allToAll, per rank for allGather). */
  readonly count: number;
  readonly elementBytes: number;
  readonly root: number;
  readonly algorithm: string;
  readonly protocol: string;
  /** The executor's chunk in elements, to simulate exactly what it runs; absent: the simulator's GPU-library chunking. */
  readonly chunkCount?: number;
  /**
   * The call's input is its output (PyTorch's all_reduce always is): its schedules are the
   * executor's in-place ones, which may stage through scratch and copy back. Default false.
   */
  readonly inPlace?: boolean;
  /**
   * How many times each rank makes the call back to back, as a benchmark times it (default 1).
   * A rank starts its next call as soon as its last one returned, so ranks with less to do run
   * ahead, as far as their sends let them.
   */
  readonly calls?: number;
  /** The count whose working set sets a CPU host's cache tiers (default `count`): a stand-in for a larger call keeps that call's memory speeds. */
  readonly workingSetCount?: number;
  /** A pattern that is no collective's algorithm (nccl-tests' sendrecv), run instead of the registry's `algorithm`. */
  readonly generator?: ScheduleGenerator;
  /** Filled by the schedule walk when given: when each rank ran each step, and how busy each link was over time. */
  readonly trace?: CallTrace;
  /** A long walk's progress, and the time it may take (schedule walks only). */
  readonly watch?: FlowWatch;
  /** Walk every channel even where they are images of each other (channel-symmetry.ts), to check the fold against. */
  readonly everyChannel?: boolean;
}

/**
 * What a caller asks of a long flow simulation: to hear how far it got, and to stop it at a
 * deadline, or as soon as its progress says it would end well past it.
 */
export interface FlowWatch {
  /** The clock's time (ms) past which the walk stops with FlowBudgetExceeded. */
  readonly deadlineMs?: number;
  /** Told the fraction of the ranks' steps walked so far, a few times a second. */
  readonly progress?: (fraction: number) => void;
  /** The clock the deadline is on, in ms (performance.now by default). */
  readonly clock?: () => number;
}

/** A watched walk ran past its deadline, or was predicted to: the caller answers with a cheaper model, and says so. */
export class FlowBudgetExceeded extends Error {
  /** The walk's whole time its progress predicted, when it stopped for that (ms); undefined when it reached the deadline. */
  readonly predictedMs: number | undefined;

  constructor(predictedMs?: number) {
    super(
      predictedMs === undefined
        ? 'the flow simulation ran past its deadline'
        : `the flow simulation would take about ${(predictedMs / 1000).toFixed(1)} s, well past its deadline`,
    );
    this.name = 'FlowBudgetExceeded';
    this.predictedMs = predictedMs;
  }
}

/** What a traced call recorded (the timeline view and `tsccl sim timeline` read it). */
export interface CallTrace {
  readonly programs: TracedProgram[];
  /** Every change of a link's load: from `timeUs` on, `bytesPerUs` crossed directed link `link`. */
  readonly rates: { timeUs: number; link: number; bytesPerUs: number }[];
}

/** One channel of one rank's schedule and when it ran. */
export interface TracedProgram {
  /** The rank, by its index in the call's ranks (not its place on the channel's ring). */
  readonly rank: number;
  readonly channel: number;
  /** 0 send, 1 recv, 2 local copy or reduction, 3 receive-and-reduce (schedule-program.ts). */
  readonly kinds: Uint8Array;
  /** The peer rank of a transfer (call index), -1 for a local step. */
  readonly peers: Int32Array;
  readonly bytes: Float64Array;
  readonly offsets: Float64Array;
  readonly counts: Float64Array;
  /** When the rank reached each step; starts[i + 1] is when step i ended, the last entry when the channel ended. */
  readonly starts: Float64Array;
}

export interface SimOutcome {
  /** From the start until the last rank's last call returned. */
  readonly timeUs: number;
  /**
   * What a benchmark that times back-to-back calls on every rank reports: the mean over ranks of
   * the time a rank took per call after its first (which warms up and sets how far ranks run
   * ahead of each other); timeUs where there is one call. The one-shot and in-switch paths
   * are modelled one call at a time: every rank waits for all its peers in each call, so
   * back-to-back calls barely overlap, and they report their single call's time.
   */
  readonly rankCallUs: number;
  readonly channels: number;
  /** The channels the walk moved one by one: fewer than `channels` where they are images of each other (channel-symmetry.ts). */
  readonly walkedChannels: number;
  /** Bytes each directed link carried (on the wire, protocol overhead included). */
  readonly linkBytes: Float64Array;
  /** Each link's capacity in this call (bytes/us): a CPU host's cache tiers scale its links by the call's working set. */
  readonly capacities: Float64Array;
}

/** The outcome of a path simulated one call on one channel (in-switch, one-shot): every rank's call takes the whole time. */
export function singleCallOutcome(
  timeUs: number,
  network: { readonly carried: Float64Array; readonly capacity: Float64Array },
): SimOutcome {
  return {
    timeUs,
    rankCallUs: timeUs,
    channels: 1,
    walkedChannels: 1,
    linkBytes: network.carried,
    capacities: network.capacity,
  };
}
