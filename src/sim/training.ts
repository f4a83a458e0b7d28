import { type BucketSpan, backwardOverlap } from './backward-overlap.js';
import { invalidArgument } from '../errors.js';
import type { TopologyGraph } from '../topology/topology-graph.js';
import { type GroupKind, layoutGroups } from './link-usage.js';
import { type SimMode, type SimRow, type TscclChooser, simulateExchange, simulateRow } from './simulate.js';
import { type FaultPlan, simulateWithFaults } from './fault-cost.js';
import { simulateCompressedRow } from './compressed-row.js';
import type { CompressionSpec } from '../compress/compression-spec.js';
import type { BenchOpName } from '../algorithms/bench-ops.js';

/** A transformer, as far as its communication is concerned. */
export interface ModelSpec {
  readonly name: string;
  readonly layers: number;
  readonly hidden: number;
  readonly sequence: number;
  readonly parameters: number;
  /** Mixture-of-experts: experts per MoE layer and experts each token visits (0 = dense). */
  readonly experts: number;
  readonly topK: number;
  /** Parameters one token passes through (MoE: the shared ones and topK experts); the total for a dense model. */
  readonly activeParameters: number;
}

/**
 * A mixture-of-experts model's parameters split into the shared ones (attention, embeddings,
 * norms, router) and those of all experts, from the published total and active counts: total =
 * shared + experts x per-expert, active = shared + topK x per-expert.
 */
export function expertSplit(model: ModelSpec): { shared: number; experts: number } {
  if (model.experts === 0) return { shared: model.parameters, experts: 0 };
  const perExpert = (model.parameters - model.activeParameters) / (model.experts - model.topK);
  return { shared: model.parameters - model.experts * perExpert, experts: model.experts * perExpert };
}

/**
 * Published shapes: GPT-3 (Brown et al. 2020, table 2.1), Llama 2/3 (Meta model cards), Mixtral
 * (Mistral AI: 46.7B parameters, 12.9B used per token).
 */
export const MODELS: Readonly<Record<string, ModelSpec>> = {
  'gpt3-175b': {
    name: 'gpt3-175b',
    layers: 96,
    hidden: 12288,
    sequence: 2048,
    parameters: 175e9,
    experts: 0,
    topK: 0,
    activeParameters: 175e9,
  },
  'llama-70b': {
    name: 'llama-70b',
    layers: 80,
    hidden: 8192,
    sequence: 4096,
    parameters: 70e9,
    experts: 0,
    topK: 0,
    activeParameters: 70e9,
  },
  'llama3-405b': {
    name: 'llama3-405b',
    layers: 126,
    hidden: 16384,
    sequence: 8192,
    parameters: 405e9,
    experts: 0,
    topK: 0,
    activeParameters: 405e9,
  },
  'mixtral-8x7b': {
    name: 'mixtral-8x7b',
    layers: 32,
    hidden: 4096,
    sequence: 4096,
    parameters: 46.7e9,
    experts: 8,
    topK: 2,
    activeParameters: 12.9e9,
  },
};

export interface TrainingLayout {
  readonly tp: number;
  readonly pp: number;
  readonly dp: number;
  readonly ep: number;
  readonly microBatch: number;
  readonly globalBatch: number;
  /** Bytes per activation element (2 for bf16). */
  readonly activationBytes: number;
  /** Bytes per gradient element in the data-parallel reduction. */
  readonly gradientBytes: number;
  /** Megatron sequence parallelism: all-gather + reduce-scatter instead of all-reduce in TP. */
  readonly sequenceParallel: boolean;
}

export interface TrainingCollective {
  readonly group: GroupKind | 'ep';
  readonly op: BenchOpName;
  readonly purpose: string;
  readonly groupSize: number;
  readonly callsPerStep: number;
  readonly bytesPerCall: number;
  readonly timePerCallUs: number;
  readonly timePerStepUs: number;
  readonly algorithm: string;
  readonly bottleneck: string;
}

export interface TrainingReport {
  readonly model: ModelSpec;
  readonly layout: TrainingLayout;
  readonly microBatchesPerStep: number;
  readonly collectives: readonly TrainingCollective[];
  /** Sum of all communication, assuming none of it overlaps compute or other communication. */
  readonly totalUs: number;
  /** The step with compute, where the accelerators' peak is known (bf16Tflops). */
  readonly step?: TrainingTimeline;
}

/**
 * A step's time on rank 0 (every data-parallel rank runs the same timeline in this model): its
 * compute, the tensor-, pipeline- and expert-parallel communication on the critical path, and
 * the data-parallel gradient reduction overlapped with the last micro-batch's backward pass.
 */
export interface TrainingTimeline {
  readonly tflops: number;
  readonly mfu: number;
  /** Forward and backward of every micro-batch, with the pipeline's (pp - 1) idle slots (1F1B). */
  readonly computeUs: number;
  /** The part of computeUs that is the pipeline's idle slots: (pp - 1) micro-batches' forward and backward. */
  readonly bubbleUs: number;
  /** The last micro-batch's backward, which the gradient reduction overlaps. */
  readonly backwardUs: number;
  /** TP, PP and EP communication, not overlapped. */
  readonly criticalCommUs: number;
  readonly dpBuckets: readonly BucketSpan[];
  /** Data-parallel reduction left after backward (expert gradients' reduction after it, whole). */
  readonly dpExposedUs: number;
  readonly stepUs: number;
  /** The step if no communication overlapped compute: the same calls and buckets, each after the compute before it. */
  readonly serialStepUs: number;
}

/**
 * Model FLOPs utilisation assumed for a step's compute: Meta reports 38-43% BF16 MFU training
 * Llama 3 405B on up to 16K H100s (The Llama 3 Herd of Models, 2024, table 4).
 */
export const DEFAULT_MFU = 0.4;
/** PyTorch DDP's default gradient bucket (bucket_cap_mb). */
export const DEFAULT_BUCKET_BYTES = 25 * 2 ** 20;

/**
 * The communication of one training step of rank 0, per parallel dimension (Megatron-LM's
 * scheme, Narayanan et al. 2021): TP all-reduces twice per layer forward and twice backward
 * (or all-gather + reduce-scatter with sequence parallelism); PP sends activations forward and
 * gradients back once per micro-batch at each stage boundary; DP reduces the gradients of its
 * shard of the parameters once per step; EP exchanges tokens with two all-to-alls forward and
 * two backward per MoE layer. Each collective is simulated on rank 0's group.
 */
export function trainingStep(
  graph: TopologyGraph,
  model: ModelSpec,
  layout: TrainingLayout,
  mode: SimMode,
  nvls: boolean,
  options: {
    chooser?: TscclChooser;
    mfu?: number;
    bucketBytes?: number;
    /** The data-parallel gradient reduction compressed to this format (simulateCompressedRow). */
    compression?: { spec: CompressionSpec; codecGBps: number };
    /** Every call priced with these faults' recovery (their failures before the step: a step that sees one fail adds its detection). */
    faults?: FaultPlan;
  } = {},
): TrainingReport {
  const { tp, pp, dp, ep } = layout;
  const world = tp * pp * dp;
  if (world > graph.accelerators.length) {
    throw invalidArgument(
      `tp ${tp} x pp ${pp} x dp ${dp} = ${world} ranks, but the topology has ${graph.accelerators.length} accelerators (use --nodes)`,
      { argument: '--dp' },
    );
  }
  if (model.layers % pp !== 0)
    throw invalidArgument(`--pp ${pp} must divide the ${model.layers} layers of ${model.name}`, { argument: '--pp' });
  if (dp % ep !== 0) throw invalidArgument(`--ep ${ep} must divide --dp ${dp}`, { argument: '--ep' });
  if (model.experts > 0 && model.experts % ep !== 0)
    throw invalidArgument(`--ep ${ep} must divide the ${model.experts} experts of ${model.name}`, { argument: '--ep' });
  const perReplica = layout.microBatch * dp;
  if (layout.globalBatch % perReplica !== 0)
    throw invalidArgument(
      `--global-batch ${layout.globalBatch} must be a multiple of micro-batch x dp = ${perReplica}`,
      { argument: '--global-batch' },
    );
  const m = layout.globalBatch / perReplica;
  const layersPerStage = model.layers / pp;
  const activation = layout.microBatch * model.sequence * model.hidden * layout.activationBytes;
  const collectives: TrainingCollective[] = [];
  /** One call of a group, simulated (analytically past 64 ranks), with the faults' recovery where there are faults. */
  const simulateOn = (devices: readonly number[], op: BenchOpName, bytes: number, gradients = false): SimRow => {
    const groupMode: SimMode = devices.length > 64 ? 'analytical' : mode;
    const request = { op, bytes, mode: groupMode, nvls, elementBytes: 2, root: 0, chooser: options.chooser };
    const on = (g: TopologyGraph): SimRow => {
      if (op === 'sendrecv')
        return simulateExchange(g, devices, bytes, { mode: groupMode, elementBytes: 2, chooser: options.chooser });
      if (gradients && options.compression !== undefined)
        return simulateCompressedRow(g, devices, {
          ...request,
          compression: options.compression.spec,
          codecGBps: options.compression.codecGBps,
        });
      return simulateRow(g, devices, request);
    };
    return options.faults === undefined ? on(graph) : simulateWithFaults(options.faults, graph, devices, on);
  };
  const add = (
    group: GroupKind | 'ep',
    ranks: readonly number[],
    op: BenchOpName,
    purpose: string,
    calls: number,
    bytes: number,
  ) => {
    if (ranks.length < 2 || calls === 0) return;
    const row = simulateOn(
      ranks.map((r) => graph.accelerators[r]),
      op,
      bytes,
      group === 'dp' && op === 'all_reduce',
    );
    const bottleneck =
      row.bottleneck === undefined ? `${row.bound} (analytical)` : `${row.bottleneck.link} ${row.bottleneck.kind}`;
    collectives.push({
      group,
      op,
      purpose,
      groupSize: ranks.length,
      callsPerStep: calls,
      bytesPerCall: bytes,
      timePerCallUs: row.timeUs,
      timePerStepUs: row.timeUs * calls,
      algorithm: row.algorithm,
      bottleneck,
    });
  };
  const shape = { tp, pp, dp };
  const tpGroup = layoutGroups(shape, 'tp')[0];
  const tpCalls = 4 * layersPerStage * m;
  if (layout.sequenceParallel) {
    add('tp', tpGroup, 'all_gather', 'sequence-parallel gather before attention/MLP (fwd+bwd)', tpCalls, activation);
    add(
      'tp',
      tpGroup,
      'reduce_scatter',
      'sequence-parallel scatter after attention/MLP (fwd+bwd)',
      tpCalls,
      activation,
    );
  } else {
    add('tp', tpGroup, 'all_reduce', 'attention and MLP outputs, 2 fwd + 2 bwd per layer', tpCalls, activation);
  }
  if (pp > 1)
    add(
      'pp',
      layoutGroups(shape, 'pp')[0],
      'sendrecv',
      'activations fwd and gradients bwd per micro-batch',
      2 * m,
      activation / tp,
    );
  // Expert parallelism shards the experts over ep ranks of the data-parallel group: only the shared
  // parameters are replicated dp times; each expert's gradients are reduced over the dp / ep ranks holding it.
  const dpGroup = layoutGroups(shape, 'dp')[0];
  const { shared, experts } = expertSplit(model);
  const sharded = model.experts > 0 && ep > 1;
  const replicated = sharded ? shared : model.parameters;
  add(
    'dp',
    dpGroup,
    'all_reduce',
    sharded ? 'gradients of the shared parameters, once per step' : 'gradient reduction once per step',
    1,
    (replicated / (tp * pp)) * layout.gradientBytes,
  );
  if (sharded) {
    add(
      'dp',
      dpGroup.filter((_, i) => i % ep === 0),
      'all_reduce',
      `gradients of this rank's ${model.experts / ep} experts per layer, over the dp / ep ranks holding them`,
      1,
      (experts / (tp * pp * ep)) * layout.gradientBytes,
    );
  }
  if (model.experts > 0 && ep > 1) {
    const epGroup = dpGroup.slice(0, ep);
    add(
      'ep',
      epGroup,
      'alltoall',
      'token dispatch and combine, 2 fwd + 2 bwd per MoE layer',
      4 * layersPerStage * m,
      (activation * model.topK) / tp,
    );
  }
  const totalUs = collectives.reduce((a, c) => a + c.timePerStepUs, 0);
  const tflops = graph.devices[graph.accelerators[0]].bf16Tflops;
  const report = { model, layout, microBatchesPerStep: m, collectives, totalUs };
  if (tflops === undefined) return report;
  // Training costs 6 FLOPs per active parameter per token: 2 forward, 4 backward.
  const mfu = options.mfu ?? DEFAULT_MFU;
  const flopsPerMicroBatch = (6 * model.activeParameters * layout.microBatch * model.sequence) / (tp * pp);
  const microBatchUs = (flopsPerMicroBatch / (tflops * 1e12 * mfu)) * 1e6;
  const computeUs = microBatchUs * (m + pp - 1);
  const backwardUs = (microBatchUs * 4) / 6;
  const [gradients, ...expertGradients] = collectives.filter((c) => c.group === 'dp');
  const dpDevices = dpGroup.map((r) => graph.accelerators[r]);
  const times = new Map<number, number>();
  const timeOf = (bytes: number) => {
    let t = times.get(bytes);
    if (t === undefined) times.set(bytes, (t = simulateOn(dpDevices, 'all_reduce', bytes, true).timeUs));
    return t;
  };
  const overlap =
    gradients === undefined
      ? { buckets: [], exposedUs: 0, serialUs: 0 }
      : backwardOverlap(backwardUs, gradients.bytesPerCall, {
          bucketBytes: options.bucketBytes ?? DEFAULT_BUCKET_BYTES,
          timeOf,
        });
  const criticalCommUs = collectives.filter((c) => c.group !== 'dp').reduce((a, c) => a + c.timePerStepUs, 0);
  const dpExposedUs = overlap.exposedUs + expertGradients.reduce((a, c) => a + c.timePerStepUs, 0);
  return {
    ...report,
    step: {
      tflops,
      mfu,
      computeUs,
      bubbleUs: microBatchUs * (pp - 1),
      backwardUs,
      criticalCommUs,
      dpBuckets: overlap.buckets,
      dpExposedUs,
      stepUs: computeUs + criticalCommUs + dpExposedUs,
      // The same buckets back to back after backward: a whole-gradient call, cheaper than its
      // buckets where they are latency-bound, would make overlap look like a loss.
      serialStepUs: computeUs + criticalCommUs + overlap.serialUs + (dpExposedUs - overlap.exposedUs),
    },
  };
}
