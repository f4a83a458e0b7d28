import type { Tensor } from '@tensorflow/tfjs';
import { type CallOptions, callOptionsOf } from '../comm/call-options.js';
import { settleAll } from '../comm/settle-all.js';
import { invalidArgument } from '../errors.js';
import { type Batch, batchTensors } from './data-parallel.js';
import {
  GradientSync,
  type GradientSyncOptions,
  type SyncReport,
  type TrainingComm,
  type TrainingMemory,
} from './gradient-sync.js';
import { forwardLayer } from './layer-runner.js';
import type { Forwarded, LayeredModel } from './layered-model.js';
import { SoloComm } from './solo-comm.js';
import { type StepTrace, epochMs } from './step-trace.js';

export type PipelineSchedule = 'gpipe' | '1f1b';
export const PIPELINE_SCHEDULES: readonly PipelineSchedule[] = ['gpipe', '1f1b'];

export interface PipelineOptions extends GradientSyncOptions {
  /** Micro-batches each step's batch is cut into (its rows must divide evenly). */
  microBatches: number;
  /** 'gpipe': every forward, then every backward; '1f1b' (default): after a warm-up, one forward, one backward (PipeDream-Flush). */
  schedule?: PipelineSchedule;
  /** The model's layers this stage runs, [first, end); by default the layers split evenly over the stages in order. */
  layers?: readonly [number, number];
  /** This stage's data-parallel communicator (the same stage in the other replicas), if the model is replicated. */
  dataParallel?: TrainingComm;
}

export interface PipelineStepReport extends SyncReport {
  /** The step's loss averaged over micro-batches and replicas: on the last stage only. */
  loss: number | undefined;
  forwardMs: number;
  backwardMs: number;
  /** Time this stage waited for activations or gradients from its neighbours: the pipeline's bubble, and their transfer. */
  waitMs: number;
  stepMs: number;
}

type Op = { readonly kind: 'F' | 'B'; readonly micro: number };

/** The order of a stage's forwards (F) and backwards (B) of micro-batches 0..m-1. */
export function pipelineOrder(schedule: PipelineSchedule, stage: number, stages: number, micro: number): Op[] {
  const F = (m: number): Op => ({ kind: 'F', micro: m });
  const B = (m: number): Op => ({ kind: 'B', micro: m });
  if (schedule === 'gpipe') {
    // Backward from the last micro-batch, which the last stage can start at once.
    return [
      ...Array.from({ length: micro }, (_, m) => F(m)),
      ...Array.from({ length: micro }, (_, m) => B(micro - 1 - m)),
    ];
  }
  const warmUp = Math.min(stages - stage - 1, micro);
  const ops: Op[] = [];
  for (let m = 0; m < warmUp; m++) ops.push(F(m));
  for (let m = 0; m < micro - warmUp; m++) ops.push(F(warmUp + m), B(m));
  for (let m = micro - warmUp; m < micro; m++) ops.push(B(m));
  return ops;
}

/** [first, end) of stage `stage` when `layers` layers split as evenly as they can over `stages`, earlier stages taking the extra. */
export function evenStageLayers(layers: number, stage: number, stages: number): [number, number] {
  const base = Math.floor(layers / stages);
  const extra = layers % stages;
  const first = stage * base + Math.min(stage, extra);
  return [first, first + base + (stage < extra ? 1 : 0)];
}

/** Most dimensions an activation between stages may have. */
const MAX_RANK = 6;

/**
 * Pipeline parallelism: the model's layers cut into stages, stage s on rank s of the pipeline's
 * communicator; each step's batch cut into micro-batches whose activations go forward by
 * `send`/`recv` and whose gradients come back the same way, in the GPipe or 1F1B order. After
 * the last micro-batch, the stage's gradients (averaged over micro-batches, and over replicas
 * when `dataParallel` is given) update its layers.
 */
export class PipelineParallel {
  readonly comm: TrainingComm;
  readonly stage: number;
  readonly stages: number;
  readonly layers: readonly [number, number];
  private readonly model: LayeredModel;
  private readonly stageModel: LayeredModel;
  private readonly sync: GradientSync;
  private readonly microBatches: number;
  private readonly schedule: PipelineSchedule;
  private readonly lossBuffer: Float32Array;
  private readonly dataParallel: TrainingComm;

  constructor(comm: TrainingComm, model: LayeredModel, options: PipelineOptions) {
    const where = { rank: comm.rank };
    const { microBatches, schedule = '1f1b' } = options ?? ({} as PipelineOptions);
    if (!Number.isInteger(microBatches) || microBatches < 1) {
      throw invalidArgument(`PipelineParallel: microBatches must be a positive integer, got ${microBatches}`, {
        ...where,
        argument: 'microBatches',
      });
    }
    if (!PIPELINE_SCHEDULES.includes(schedule)) {
      throw invalidArgument(
        `PipelineParallel: schedule must be one of ${PIPELINE_SCHEDULES.join(', ')}, got ${String(schedule)}`,
        {
          ...where,
          argument: 'schedule',
        },
      );
    }
    if (comm.size > model.layers.length) {
      throw invalidArgument(`PipelineParallel: ${comm.size} stages but only ${model.layers.length} layers`, {
        ...where,
        argument: 'comm',
      });
    }
    const layers = options.layers ?? evenStageLayers(model.layers.length, comm.rank, comm.size);
    if (
      !Number.isInteger(layers[0]) ||
      !Number.isInteger(layers[1]) ||
      layers[0] < 0 ||
      layers[1] <= layers[0] ||
      layers[1] > model.layers.length
    ) {
      throw invalidArgument(
        `PipelineParallel: layers must be [first, end) within 0..${model.layers.length}, got [${layers}]`,
        {
          ...where,
          argument: 'layers',
        },
      );
    }
    this.comm = comm;
    this.stage = comm.rank;
    this.stages = comm.size;
    this.layers = layers;
    this.model = model;
    this.microBatches = microBatches;
    this.schedule = schedule;
    this.stageModel = { tf: model.tf, layers: model.layers.slice(layers[0], layers[1]), loss: model.loss };
    const dataParallel = options.dataParallel ?? new SoloComm();
    this.dataParallel = dataParallel;
    this.sync = new GradientSync(dataParallel, this.stageModel, options);
    this.lossBuffer = dataParallel.alloc('float32', 1);
  }

  /** Rank 0's parameters of this stage to its replicas (nothing to do without data parallelism). */
  broadcastParameters(options: CallOptions = {}): Promise<void> {
    return this.sync.broadcastParameters(options);
  }

  /** One step: every micro-batch forward and backward in the schedule's order, then the update. */
  async step(batch: Batch, options: CallOptions & { trace?: StepTrace } = {}): Promise<PipelineStepReport> {
    const { trace } = options;
    const { tf } = this.model;
    const call = callOptionsOf(options);
    const first = this.stage === 0;
    const last = this.stage === this.stages - 1;
    const { inputs, targets } = batchTensors(this.model, batch);
    const rows = inputs.shape[0] as number;
    if (rows % this.microBatches !== 0) {
      inputs.dispose();
      targets.dispose();
      throw invalidArgument(
        `PipelineParallel.step: the batch's ${rows} rows do not split into ${this.microBatches} micro-batches`,
        {
          rank: this.comm.rank,
          argument: 'batch',
        },
      );
    }
    const microRows = rows / this.microBatches;
    const slice = (t: Tensor, m: number) => tf.slice(t, m * microRows, microRows);
    const kept = new Map<number, { forwarded: Forwarded[]; input: Tensor; dy?: Tensor; outShape: number[] }>();
    const sends: Promise<void>[] = [];
    const send = (data: Float32Array | Int32Array, peer: number) => {
      const s = this.comm.send(data, peer, call);
      s.catch(() => {});
      sends.push(s);
    };
    let waitMs = 0;
    const received = async (data: Float32Array | Int32Array, peer: number) => {
      const from = epochMs();
      await this.comm.recv(data, peer, call);
      const to = epochMs();
      waitMs += to - from;
      trace?.span('wait', `recv from stage ${peer}`, from, to);
    };
    let forwardMs = 0;
    let backwardMs = 0;
    let lossSum = 0;
    let backwards = 0;
    let report: SyncReport | undefined;
    const started = performance.now();
    try {
      for (const op of pipelineOrder(this.schedule, this.stage, this.stages, this.microBatches)) {
        if (op.kind === 'F') {
          let input: Tensor;
          if (first) input = slice(inputs, op.micro);
          else {
            const header = new Int32Array(MAX_RANK + 1);
            await received(header, this.stage - 1);
            const shape = Array.from(header.subarray(1, 1 + header[0]));
            const data = new Float32Array(shape.reduce((a, b) => a * b, 1));
            await received(data, this.stage - 1);
            input = tf.tensor(data, shape, 'float32');
          }
          const from = performance.now();
          const spanFrom = epochMs();
          const forwarded: Forwarded[] = [];
          let x = input;
          for (const layer of this.stageModel.layers) {
            forwarded.push(await forwardLayer(tf, layer, x));
            x = forwarded[forwarded.length - 1].output;
          }
          const entry: { forwarded: Forwarded[]; input: Tensor; dy?: Tensor; outShape: number[] } = {
            forwarded,
            input,
            outShape: x.shape,
          };
          if (last) {
            const microTargets = slice(targets, op.micro);
            const { value, grads } = tf.tidy(() =>
              tf.valueAndGrads((out: Tensor) => this.model.loss(out, microTargets))([x]),
            );
            lossSum += (value.dataSync() as Float32Array)[0];
            value.dispose();
            microTargets.dispose();
            entry.dy = grads[0];
            forwardMs += performance.now() - from;
          } else {
            const header = new Int32Array(MAX_RANK + 1);
            header[0] = x.rank;
            header.set(x.shape, 1);
            const data = x.dataSync() as Float32Array;
            forwardMs += performance.now() - from;
            send(header, this.stage + 1);
            send(data, this.stage + 1);
          }
          kept.set(op.micro, entry);
          trace?.span('compute', `F${op.micro}`, spanFrom, epochMs());
        } else {
          const entry = kept.get(op.micro) as {
            forwarded: Forwarded[];
            input: Tensor;
            dy?: Tensor;
            outShape: number[];
          };
          kept.delete(op.micro);
          let dy: Tensor;
          if (last) dy = entry.dy as Tensor;
          else {
            const data = new Float32Array(entry.outShape.reduce((a, b) => a * b, 1));
            await received(data, this.stage + 1);
            dy = tf.tensor(data, entry.outShape, 'float32');
          }
          const from = performance.now();
          const spanFrom = epochMs();
          const finalPass = ++backwards === this.microBatches;
          this.sync.beginPass(finalPass, call);
          if (finalPass && last) {
            const whole = this.model.reduceLoss === undefined ? lossSum : await this.model.reduceLoss(lossSum, call);
            this.lossBuffer[0] = whole / this.microBatches;
            this.sync.issue(this.lossBuffer);
          }
          for (let i = entry.forwarded.length - 1; i >= 0; i--) {
            const wantDx = i > 0 || !first;
            const { dx, grads } = await entry.forwarded[i].backward(dy, wantDx);
            dy.dispose();
            this.sync.add(this.stageModel.layers[i].params, grads);
            dy = dx as Tensor;
          }
          for (const f of entry.forwarded) f.output.dispose();
          entry.input.dispose();
          if (!first) {
            const data = dy.dataSync() as Float32Array;
            dy.dispose();
            send(data, this.stage - 1);
          }
          backwardMs += performance.now() - from;
          trace?.span('compute', `B${op.micro}`, spanFrom, epochMs());
          // The update waits for the data-parallel all-reduces; the micro-batches before it only accumulate.
          const passReport = await this.sync.finishPass();
          if (finalPass) report = passReport;
        }
      }
      await settleAll(sends);
    } finally {
      for (const entry of kept.values()) {
        for (const f of entry.forwarded) {
          f.release();
          f.output.dispose();
        }
        entry.input.dispose();
        entry.dy?.dispose();
      }
      inputs.dispose();
      targets.dispose();
    }
    const done = report as SyncReport;
    trace?.collectCalls();
    return {
      ...done,
      loss: last ? this.lossBuffer[0] : undefined,
      forwardMs,
      backwardMs,
      waitMs,
      stepMs: performance.now() - started,
    };
  }

  /**
   * Saves parameters and optimizer state with the step to resume at: one file written by rank 0
   * of the replicas, or one per rank under ZeRO (each stage to `path.stage<s>`, `path.rank<r>`). Resolves once it is written everywhere.
   */
  saveCheckpoint(path: string, options: CallOptions & { step: number }): Promise<void> {
    return this.sync.save(`${path}.stage${this.stage}`, options.step, options);
  }

  /** Loads a checkpoint `saveCheckpoint` wrote with the same layout of ranks; resolves with the step to resume at. */
  loadCheckpoint(path: string): Promise<number> {
    return this.sync.load(`${path}.stage${this.stage}`);
  }

  /** What this rank holds for training, in bytes. */
  memory(): Promise<TrainingMemory> {
    return this.sync.memory();
  }

  /** Returns the gradient buckets' shared memory; the object is unusable after. */
  dispose(): void {
    this.sync.dispose();
    this.dataParallel.free(this.lossBuffer);
  }
}
