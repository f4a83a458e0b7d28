import { BENCH_OPS, type BenchOpName } from '../algorithms/bench-ops.js';
import { ONE_SHOT } from '../algorithms/one-shot-plan.js';
import { invalidArgument } from '../errors.js';
import type { TopologyGraph } from '../topology/topology-graph.js';
import { simulateSchedules } from './schedule-flows.js';
import { STEP_LOCAL, STEP_RECV, STEP_RECV_REDUCE, STEP_SEND } from './schedule-program.js';
import type { CallTrace, TracedProgram } from './sim-call.js';
import { type TscclChooser, flowCallOf, linkLoads, ranksRunTsccl, simulateRow, withEnds } from './simulate.js';
import { SWITCH_ALGORITHMS } from './nvls-flows.js';

export type TimelineOpKind = 'send' | 'recv' | 'recvReduce' | 'local';

/** One transfer or local operation of a step: which elements, to or from whom. */
export interface TimelineOp {
  readonly kind: TimelineOpKind;
  /** The other rank of a transfer; -1 for a local copy or reduction. */
  readonly peer: number;
  readonly bytes: number;
  /** Elements [offset, offset + count) of the buffer the schedule names. */
  readonly offset: number;
  readonly count: number;
  readonly startUs: number;
  readonly endUs: number;
}

/**
 * A step of one rank on one channel: what it sent and the receive (or local operation) that
 * ends it, as a ring's 2(n-1) steps are each a send to the next rank and a receive from the last.
 */
export interface TimelineStep {
  readonly rank: number;
  readonly channel: number;
  readonly index: number;
  readonly startUs: number;
  readonly endUs: number;
  readonly ops: readonly TimelineOp[];
}

export interface TimelineLink {
  readonly index: number;
  readonly link: string;
  readonly from: string;
  readonly to: string;
  readonly kind: string;
  readonly capacityGBps: number;
  /** Mean utilisation over the call: bytes / (capacity x call time). */
  readonly utilisation: number;
  readonly bytes: number;
  /** From each point's time on, until the next point, the link carried this fraction of its capacity. */
  readonly points: readonly (readonly [timeUs: number, utilisation: number])[];
}

export interface TimelineDocument {
  readonly tool: 'tsccl sim timeline';
  readonly topology: string;
  readonly op: BenchOpName;
  readonly bytes: number;
  readonly ranks: number;
  readonly algorithm: string;
  readonly protocol: string;
  /** Predicted time of the call (the flow engine's), microseconds; a prediction, not a measurement. */
  readonly timeUs: number;
  readonly channels: number;
  /** The channel whose steps are listed (every channel loads the links). */
  readonly channel: number;
  readonly steps: readonly TimelineStep[];
  readonly links: readonly TimelineLink[];
  /** The link busiest over the call. */
  readonly bottleneck: string | null;
}

export interface TimelineRequest {
  readonly op: BenchOpName;
  readonly bytes: number;
  readonly algorithm?: string;
  readonly protocol?: string;
  readonly nvls: boolean;
  readonly root: number;
  readonly channel?: number;
  readonly chooser?: TscclChooser;
}

const KIND_NAMES: Record<number, TimelineOpKind> = {
  [STEP_SEND]: 'send',
  [STEP_RECV]: 'recv',
  [STEP_RECV_REDUCE]: 'recvReduce',
  [STEP_LOCAL]: 'local',
};

/**
 * One collective on a topology, step by step: the algorithm and protocol the simulator picks
 * among those that run a schedule (or those asked for) run once on the flow engine with tracing
 * on, which records when every rank reached every step of its schedule and every link's load as
 * it changed.
 */
export function collectiveTimeline(
  graph: TopologyGraph,
  rankDevices: readonly number[],
  request: TimelineRequest,
): TimelineDocument {
  if (ranksRunTsccl(graph, rankDevices))
    throw invalidArgument(
      `${graph.topology.name}: the timeline models accelerator topologies; ranks that run tsccl itself are timed by tsccl bench`,
      { argument: '--topo' },
    );
  if (!(request.bytes >= 4))
    throw invalidArgument(`--size ${request.bytes}: the timeline needs at least one float32 (4 bytes) to move`, {
      argument: '--size',
    });
  if (BENCH_OPS[request.op].collective === undefined)
    throw invalidArgument(`the timeline shows collectives; ${request.op} is point-to-point`, { argument: '--op' });
  const row = simulateRow(graph, rankDevices, {
    op: request.op,
    bytes: request.bytes,
    ...(request.algorithm === undefined ? {} : { algorithm: request.algorithm }),
    ...(request.protocol === undefined ? {} : { protocols: [request.protocol] }),
    mode: 'flow',
    // A timeline shows a schedule: left to choose, the switches' own reductions are no candidates.
    nvls: request.algorithm === undefined ? false : request.nvls,
    elementBytes: 4,
    root: request.root,
    ...(request.chooser === undefined ? {} : { chooser: request.chooser }),
  });
  if (SWITCH_ALGORITHMS.has(row.algorithm) || row.algorithm === ONE_SHOT)
    throw invalidArgument(
      `${row.algorithm} runs no step-by-step schedule to show (the switch or one pass does the work): name another with --algo`,
      { argument: '--algo' },
    );
  const trace: CallTrace = { programs: [], rates: [] };
  const call = { ...flowCallOf({ ...request, ranks: rankDevices.length }, row), trace };
  const outcome = simulateSchedules(graph, rankDevices, call);
  const channel = request.channel ?? 0;
  if (!(Number.isInteger(channel) && channel >= 0 && channel < outcome.channels))
    throw invalidArgument(`--channel ${channel}: the call runs channels 0 to ${outcome.channels - 1}`, {
      argument: '--channel',
    });
  const steps = trace.programs.filter((p) => p.channel === channel).flatMap(stepsOf);
  steps.sort((a, b) => a.rank - b.rank || a.index - b.index);
  const links = linkSeries(graph, trace, outcome.linkBytes, outcome.capacities, outcome.timeUs);
  return {
    tool: 'tsccl sim timeline',
    topology: graph.topology.name,
    op: request.op,
    bytes: row.bytes,
    ranks: rankDevices.length,
    algorithm: row.algorithm,
    protocol: row.protocol,
    timeUs: outcome.timeUs,
    channels: outcome.channels,
    channel,
    steps,
    links,
    bottleneck: links[0]?.link ?? null,
  };
}

/** A program's operations grouped into steps: the sends since the last step, closed by a receive or a local operation. */
function stepsOf(program: TracedProgram): TimelineStep[] {
  const steps: TimelineStep[] = [];
  let ops: TimelineOp[] = [];
  const close = () => {
    if (ops.length === 0) return;
    steps.push({
      rank: program.rank,
      channel: program.channel,
      index: steps.length,
      startUs: ops[0].startUs,
      endUs: ops[ops.length - 1].endUs,
      ops,
    });
    ops = [];
  };
  for (let i = 0; i < program.kinds.length; i++) {
    ops.push({
      kind: KIND_NAMES[program.kinds[i]],
      peer: program.peers[i],
      bytes: program.bytes[i],
      offset: program.offsets[i],
      count: program.counts[i],
      startUs: program.starts[i],
      endUs: program.starts[i + 1],
    });
    if (program.kinds[i] !== STEP_SEND) close();
  }
  close();
  return steps;
}

/** Each link that carried bytes, busiest first, with its load over time (the last change at any instant counts). */
function linkSeries(
  graph: TopologyGraph,
  trace: CallTrace,
  linkBytes: Float64Array,
  capacities: Float64Array,
  timeUs: number,
): TimelineLink[] {
  const points = new Map<number, [number, number][]>();
  for (const { timeUs: t, link, bytesPerUs } of trace.rates) {
    const series = points.get(link) ?? points.set(link, []).get(link)!;
    const utilisation = bytesPerUs / capacities[link];
    const last = series[series.length - 1];
    if (last !== undefined && last[0] === t) last[1] = utilisation;
    else if (last === undefined || last[1] !== utilisation) series.push([t, utilisation]);
  }
  return linkLoads(graph, linkBytes, timeUs, capacities).map((load) => ({
    ...withEnds(graph, load),
    capacityGBps: capacities[load.index] / 1e3,
    points: points.get(load.index) ?? [],
  }));
}
