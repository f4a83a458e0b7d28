import type { Tensor } from '@tensorflow/tfjs';
import { type CallOptions, callOptionsOf } from '../comm/call-options.js';
import { invalidArgument } from '../errors.js';
import {
  GradientSync,
  type GradientSyncOptions,
  type SyncReport,
  type TrainingComm,
  type TrainingMemory,
} from './gradient-sync.js';
import { forwardLayer } from './layer-runner.js';
import { type StepTrace, epochMs } from './step-trace.js';
import type { Forwarded, LayerGradients, LayeredModel } from './layered-model.js';
import type { TokenBatch } from './text-corpus.js';

export type DataParallelOptions = GradientSyncOptions;

export interface StepOptions extends CallOptions {
  /**
   * false: add this batch's gradients to the ones kept since the last update and neither
   * communicate nor update (PyTorch's no_sync); the next synchronised step averages them all.
   */
  sync?: boolean;
  /** Records the step's compute, waits and calls (docs/TRAINING.md, "Traces"). */
  trace?: StepTrace;
}

/** One step, as this rank saw it. */
export interface StepReport extends SyncReport {
  /** The step's loss, averaged over the ranks (on a no-sync step, this rank's own). */
  loss: number;
  forwardMs: number;
  /** Backward, including copying each gradient out of TensorFlow.js and compressing it. */
  backwardMs: number;
}

export type Batch = TokenBatch | { readonly inputs: Tensor; readonly targets: Tensor };

/** A batch as two tensors that the caller disposes. */
export function batchTensors(model: LayeredModel, batch: Batch): { inputs: Tensor; targets: Tensor } {
  const { tf } = model;
  if ('rows' in batch) {
    const shape: [number, number] = [batch.rows, batch.seqLen];
    return { inputs: tf.tensor2d(batch.inputs, shape, 'int32'), targets: tf.tensor2d(batch.targets, shape, 'int32') };
  }
  return { inputs: tf.clone(batch.inputs), targets: tf.clone(batch.targets) };
}

/**
 * Data parallelism in the manner of PyTorch's DistributedDataParallel: every rank holds the
 * whole model, computes gradients on its share of the batch, and the ranks average them.
 * Backward runs layer by layer; each bucket of gradients is all-reduced as soon as it is
 * complete, so on a communicator with a progress engine (`init({ progress: 'engine' })`) the
 * reduction of the last layers' gradients runs while the first layers are still in backward.
 */
export class DataParallel {
  readonly model: LayeredModel;
  private readonly options: DataParallelOptions;
  private world: TrainingComm;
  private sync: GradientSync;
  private lossBuffer: Float32Array;

  constructor(comm: TrainingComm, model: LayeredModel, options: DataParallelOptions) {
    this.world = comm;
    this.model = model;
    this.options = options;
    this.sync = new GradientSync(comm, model, options);
    this.lossBuffer = comm.alloc('float32', 1);
  }

  /** The communicator the replicas average over. */
  get comm(): TrainingComm {
    return this.world;
  }

  /**
   * Goes on after a failure on `comm`, a communicator of the survivors (`comm.shrink`): the
   * gradients of the step that failed are dropped, and its rank 0's parameters and optimizer
   * state go to every survivor, so all resume from one state whichever of them had updated.
   * Every survivor calls it; then redo the step that failed, splitting the batch over `comm`.
   */
  async recover(comm: TrainingComm, options: CallOptions = {}): Promise<void> {
    if (this.options.zero) {
      // Each survivor's optimizer state covers its old block; the new blocks need the whole of it.
      throw invalidArgument(
        `Rank ${this.world.rank}: recover does not re-shard ZeRO state; resume from a checkpoint instead`,
        {
          rank: this.world.rank,
          argument: 'zero',
        },
      );
    }
    const old = this.world;
    try {
      this.sync.dispose();
      old.free(this.lossBuffer);
    } catch {
      // The failed communicator's memory returns when collected.
    }
    this.world = comm;
    this.sync = new GradientSync(comm, this.model, this.options);
    this.lossBuffer = comm.alloc('float32', 1);
    await this.sync.broadcastState(options);
  }

  /** Rank 0's parameters to every rank, so all start equal (as DDP does when it wraps a model). */
  broadcastParameters(options: CallOptions = {}): Promise<void> {
    return this.sync.broadcastParameters(options);
  }

  /** Forward, backward with gradients all-reduced bucket by bucket as they appear, then the optimizer's update. */
  async step(batch: Batch, options: StepOptions = {}): Promise<StepReport> {
    const sync = options.sync ?? true;
    if (typeof sync !== 'boolean') {
      throw invalidArgument(`step: sync must be a boolean, got ${String(sync)}`, {
        argument: 'sync',
        rank: this.world.rank,
      });
    }
    const { tf, layers } = this.model;
    const { inputs, targets } = batchTensors(this.model, batch);
    const forwarded: Forwarded[] = [];
    this.sync.beginPass(sync, options);
    let localLoss: number;
    let forwardMs: number;
    let backwardMs: number;
    const started = performance.now();
    try {
      let x = inputs;
      for (const layer of layers) {
        const from = epochMs();
        forwarded.push(await forwardLayer(tf, layer, x));
        options.trace?.span('compute', `forward ${layer.name}`, from, epochMs());
        x = forwarded[forwarded.length - 1].output;
      }
      const { value, grads } = tf.tidy(() => tf.valueAndGrads((out: Tensor) => this.model.loss(out, targets))([x]));
      localLoss = (value.dataSync() as Float32Array)[0];
      value.dispose();
      if (this.model.reduceLoss !== undefined)
        localLoss = await this.model.reduceLoss(localLoss, callOptionsOf(options));
      const afterForward = performance.now();
      forwardMs = afterForward - started;
      let dy: Tensor | undefined = grads[0];
      for (let i = layers.length - 1; i >= 0; i--) {
        const from = epochMs();
        const { dx, grads: paramGrads }: LayerGradients = await forwarded[i].backward(dy as Tensor, i > 0);
        (dy as Tensor).dispose();
        dy = dx;
        this.sync.write(layers[i].params, paramGrads);
        options.trace?.span('compute', `backward ${layers[i].name}`, from, epochMs());
        this.sync.issueFilled();
      }
      backwardMs = performance.now() - afterForward;
      // The loss's average goes after the buckets: under progress 'auto' it runs on the rank's own
      // thread, and calls keep their issue order across the two paths, so issued before backward
      // it would hold every bucket back until the rank waits.
      if (sync) {
        this.lossBuffer[0] = localLoss;
        this.sync.issue(this.lossBuffer);
      }
    } finally {
      for (const f of forwarded) {
        f.release();
        f.output.dispose();
      }
      inputs.dispose();
      targets.dispose();
    }
    const waitFrom = epochMs();
    const report = await this.sync.finishPass();
    if (options.trace !== undefined) {
      const { trace } = options;
      trace.span('wait', 'gradients', waitFrom, waitFrom + report.exposedCommMs);
      if (report.optimizerMs > 0) trace.span('compute', 'update', epochMs() - report.optimizerMs, epochMs());
      trace.collectCalls();
    }
    return { ...report, loss: sync ? this.lossBuffer[0] : localLoss, forwardMs, backwardMs };
  }

  /**
   * Saves parameters and optimizer state with the step to resume at: one file written by rank 0
   * of the replicas, or one per rank under ZeRO (`path.rank<r>`). Resolves once it is written everywhere.
   */
  saveCheckpoint(path: string, options: CallOptions & { step: number }): Promise<void> {
    return this.sync.save(path, options.step, options);
  }

  /** Loads a checkpoint `saveCheckpoint` wrote with the same layout of ranks; resolves with the step to resume at. */
  loadCheckpoint(path: string): Promise<number> {
    return this.sync.load(path);
  }

  /** What this rank holds for training, in bytes. */
  memory(): Promise<TrainingMemory> {
    return this.sync.memory();
  }

  /** Returns the buckets' shared memory to the communicator; the object is unusable after. */
  dispose(): void {
    this.sync.dispose();
    this.world.free(this.lossBuffer);
  }
}
