import type { FaultPlan } from './fault-cost.js';
import { BENCH_OPS, type BenchOpName, benchOp, sweepSizes } from '../algorithms/bench-ops.js';
import { dtypeInfo } from '../dtypes/dtype.js';
import { type ReplayReport, type ReplaySpan, replayTrace } from './trace-replay.js';
import type { CompressionSpec } from '../compress/compression-spec.js';
import { invalidArgument } from '../errors.js';
import type { TopologyGraph } from '../topology/topology-graph.js';
import { type GroupKind, type LinkUsageReport, layoutGroups, linkUsage } from './link-usage.js';
import { topologyProtocols } from './protocols.js';
import { type SimMode, type SimRow, type TscclChooser, ranksRunTsccl, simAlgorithms, simulateRow } from './simulate.js';
import { DEFAULT_BUCKET_BYTES, DEFAULT_MFU, type ModelSpec, type TrainingReport, trainingStep } from './training.js';
import { SWITCH_ALGORITHMS } from './nvls-flows.js';

/**
 * The JSON documents of `tsccl sim` (table, links, train, curves), built in one place: the CLI
 * prints them with `--format json` and `tsccl ui` draws them.
 */

/** A parallel layout as asked: without dp, data parallelism fills what tp x pp leave. */
export interface LayoutRequest {
  readonly tp: number;
  readonly pp: number;
  readonly dp?: number;
}

/**
 * The layout with dp filled in. Without dp the others must divide the accelerators (as
 * Megatron-LM requires of the world size): a layout that left some idle would be another job.
 */
export function fillLayout(layout: LayoutRequest, available: number): { tp: number; pp: number; dp: number } {
  const { tp, pp, dp } = layout;
  if (dp === undefined && tp * pp <= available && available % (tp * pp) !== 0) {
    throw invalidArgument(
      `tp ${tp} x pp ${pp} = ${tp * pp} does not divide the ${available} accelerators: give --dp to use fewer of them`,
      { argument: '--tp' },
    );
  }
  return { tp, pp, dp: dp ?? Math.max(1, Math.floor(available / (tp * pp))) };
}

/** The rank lists of one kind of group of a layout that must fit the accelerators. */
export function groupsOfLayout(layout: LayoutRequest, kind: GroupKind, available: number): number[][] {
  const { tp, pp, dp } = fillLayout(layout, available);
  if (tp * pp * dp > available)
    throw invalidArgument(
      `tp ${tp} x pp ${pp} x dp ${dp} needs ${tp * pp * dp} accelerators; the topology has ${available}`,
      { argument: '--tp' },
    );
  return layoutGroups({ tp, pp, dp }, kind);
}

/** Explicit groups, "0,1,2,3;4,5,6,7"; `argument` names the input in a refusal. */
export function parseGroups(text: string, argument = '--ranks'): number[][] {
  const groups = text
    .split(';')
    .filter((g) => g.trim() !== '')
    .map((g) =>
      g.split(',').map((r) => {
        const n = Number(r.trim());
        if (r.trim() === '' || !Number.isInteger(n) || n < 0)
          throw invalidArgument(`${argument} '${text}': '${r}' is not a rank`, { argument });
        return n;
      }),
    );
  if (groups.length === 0) throw invalidArgument(`${argument} '${text}' names no group`, { argument });
  return groups;
}

/** A row as the JSON table prints it: nccl-tests' columns, the link list left out unless asked. */
export function tableRow(row: SimRow, withLinks: boolean, inPlace = false): Record<string, unknown> {
  const { links, ...rest } = row;
  return {
    ...rest,
    dtype: 'float32',
    redop: row.reduces ? 'sum' : 'none',
    inPlace,
    wrong: null,
    ...(withLinks ? { links } : {}),
  };
}

export interface LinksRequest {
  readonly groups: readonly (readonly number[])[];
  readonly group: GroupKind;
  readonly bytes: number;
  readonly nvls: boolean;
  readonly chooser?: TscclChooser;
}

export type LinksDocument = { tool: 'tsccl sim links'; topology: string; kind: GroupKind } & Omit<
  LinkUsageReport,
  'rows'
> & { rows: Omit<SimRow, 'links'>[] };

export function linksDocument(graph: TopologyGraph, request: LinksRequest): LinksDocument {
  const report = linkUsage(graph, request.groups, {
    op: request.group === 'pp' ? 'sendrecv' : 'all_reduce',
    bytes: request.bytes,
    nvls: request.nvls,
    ...(request.chooser === undefined ? {} : { chooser: request.chooser }),
  });
  return {
    tool: 'tsccl sim links',
    topology: graph.topology.name,
    kind: request.group,
    ...report,
    rows: report.rows.map(({ links, ...row }) => row),
  };
}

export interface TrainRequest extends LayoutRequest {
  readonly model: ModelSpec;
  readonly ep: number;
  readonly microBatch: number;
  readonly globalBatch?: number;
  readonly gradBytes: number;
  readonly sequenceParallel: boolean;
  readonly mfu?: number;
  readonly bucketBytes?: number;
  readonly mode: SimMode;
  readonly nvls: boolean;
  readonly chooser?: TscclChooser;
  readonly compression?: { spec: CompressionSpec; codecGBps: number };
  /** Price every call with these faults' recovery (fault-cost.ts). */
  readonly faults?: FaultPlan;
}

export type TrainDocument = { tool: 'tsccl sim train'; topology: string } & TrainingReport;

export function trainDocument(graph: TopologyGraph, request: TrainRequest): TrainDocument {
  const { tp, pp, dp } = fillLayout(request, graph.accelerators.length);
  const report = trainingStep(
    graph,
    request.model,
    {
      tp,
      pp,
      dp,
      ep: request.ep,
      microBatch: request.microBatch,
      globalBatch: request.globalBatch ?? request.microBatch * dp * 8 * pp,
      activationBytes: 2,
      gradientBytes: request.gradBytes,
      sequenceParallel: request.sequenceParallel,
    },
    request.mode,
    request.nvls,
    {
      mfu: request.mfu ?? DEFAULT_MFU,
      bucketBytes: request.bucketBytes ?? DEFAULT_BUCKET_BYTES,
      ...(request.chooser === undefined ? {} : { chooser: request.chooser }),
      ...(request.compression === undefined ? {} : { compression: request.compression }),
      ...(request.faults === undefined ? {} : { faults: request.faults }),
    },
  );
  return { tool: 'tsccl sim train', topology: graph.topology.name, ...report };
}

/** One algorithm and protocol across sizes: what the curves view draws. */
export interface CurveSeries {
  readonly algorithm: string;
  readonly protocol: string;
  readonly rows: readonly { bytes: number; timeUs: number; algbwGBs: number; busbwGBs: number }[];
}

export interface CurvesDocument {
  readonly tool: 'tsccl sim curves';
  readonly topology: string;
  readonly op: BenchOpName;
  readonly ranks: number;
  readonly mode: SimMode;
  /** What the simulator picks at each size. */
  readonly best: readonly { bytes: number; timeUs: number; busbwGBs: number; algorithm: string; protocol: string }[];
  readonly series: readonly CurveSeries[];
}

export interface CurvesRequest {
  readonly op: BenchOpName;
  readonly minBytes: number;
  readonly maxBytes: number;
  readonly factor: number;
  readonly mode: SimMode;
  readonly nvls: boolean;
  readonly chooser?: TscclChooser;
}

/**
 * Time and bus bandwidth against size for every algorithm and protocol the simulator may run
 * for the op (where ranks run tsccl, the tuner's choice alone, as tsccl picks its protocol).
 */
export function curvesDocument(graph: TopologyGraph, request: CurvesRequest): CurvesDocument {
  const ranks = graph.accelerators;
  const collective = BENCH_OPS[request.op].collective;
  const sizes = sweepSizes(request.minBytes, request.maxBytes, request.factor, 1);
  const base = {
    op: request.op,
    mode: request.mode,
    nvls: request.nvls,
    elementBytes: 4,
    root: 0,
    ...(request.chooser === undefined ? {} : { chooser: request.chooser }),
  };
  const rowAt = (bytes: number, algorithm?: string, protocol?: string) =>
    simulateRow(graph, ranks, {
      ...base,
      bytes,
      ...(algorithm === undefined ? {} : { algorithm }),
      ...(protocol === undefined ? {} : { protocols: [protocol] }),
    });
  const best = sizes.map((bytes) => {
    const row = rowAt(bytes);
    return {
      bytes: row.bytes,
      timeUs: row.timeUs,
      busbwGBs: row.busbwGBs,
      algorithm: row.algorithm,
      protocol: row.protocol,
    };
  });
  const series: CurveSeries[] = [];
  const tuned = request.mode === 'flow' && ranksRunTsccl(graph, ranks);
  if (collective !== undefined && !tuned) {
    const protocols = Object.keys(topologyProtocols(graph.topology));
    for (const algorithm of simAlgorithms(graph, ranks, collective, request.nvls))
      for (const protocol of SWITCH_ALGORITHMS.has(algorithm) ? ['Simple'] : protocols) {
        if (!protocols.includes(protocol)) continue;
        series.push({
          algorithm,
          protocol,
          rows: sizes.map((bytes) => {
            const row = rowAt(bytes, algorithm, protocol);
            return { bytes: row.bytes, timeUs: row.timeUs, algbwGBs: row.algbwGBs, busbwGBs: row.busbwGBs };
          }),
        });
      }
  }
  return {
    tool: 'tsccl sim curves',
    topology: graph.topology.name,
    op: request.op,
    ranks: ranks.length,
    mode: request.mode,
    best,
    series,
  };
}

/** Flight-recorder ops whose count is per block (a rank's share); the simulator sizes them whole. */
const BLOCKWISE_OPS = new Set(['allGather', 'reduceScatter', 'alltoall', 'gather', 'scatter']);

/**
 * `tsccl sim train --trace`: a measured training run's trace replayed with every collective
 * priced on this topology by the accelerators of the world ranks that ran it (replayTrace), a
 * message as a send and receive between its two; the barrier is priced as a 4-byte all-reduce.
 * A trace of more ranks than the topology has is refused, naming -g.
 */
export function traceReplayDocument(
  graph: TopologyGraph,
  trace: { readonly traceEvents: readonly ReplaySpan[] },
  request: { readonly mode: SimMode; readonly chooser?: TscclChooser },
): ReplayReport {
  const times = new Map<string, number | undefined>();
  return replayTrace(trace, (call) => {
    const key = `${call.op}/${call.dtype}/${call.count}/${call.size}/${call.ranks.join(',')}`;
    if (times.has(key)) return times.get(key);
    const beyond = call.ranks.find((r) => r >= graph.accelerators.length);
    if (beyond !== undefined)
      throw invalidArgument(
        `the trace has rank ${beyond}, but the topology has ${graph.accelerators.length} ranks (use -g or --nodes)`,
        { argument: '-g' },
      );
    let us: number | undefined;
    const op = call.op === 'barrier' ? 'all_reduce' : call.op === 'send' ? 'sendrecv' : benchOpNameOf(call.op);
    const elementBytes = call.op === 'barrier' ? 4 : dtypeBytesOf(call.dtype);
    // A collective some of whose ranks are not in the trace cannot be placed: it stays unpriced.
    const whole = call.op === 'send' || call.ranks.length === call.size;
    if (op !== undefined && elementBytes !== undefined && whole && call.ranks.length > 1) {
      const count = call.op === 'barrier' ? 1 : call.count * (BLOCKWISE_OPS.has(call.op) ? call.size : 1);
      us = simulateRow(
        graph,
        call.ranks.map((r) => graph.accelerators[r]),
        {
          op,
          bytes: count * elementBytes,
          mode: request.mode,
          nvls: false,
          elementBytes,
          root: 0,
          ...(request.chooser === undefined ? {} : { chooser: request.chooser }),
        },
      ).timeUs;
    } else if (whole && call.ranks.length === 1) us = 0;
    times.set(key, us);
    return us;
  });
}

function benchOpNameOf(op: string): BenchOpName | undefined {
  try {
    return benchOp(op).name;
  } catch {
    return undefined;
  }
}

function dtypeBytesOf(dtype: string): number | undefined {
  try {
    return dtypeInfo(dtype).bytes;
  } catch {
    return undefined;
  }
}
