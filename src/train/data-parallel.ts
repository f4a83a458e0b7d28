import type { NamedTensorMap, Optimizer, Tensor } from '@tensorflow/tfjs';
import type { CallOptions, ReduceOptions, RootedOptions } from '../comm/call-options.js';
import type { TypedArray } from '../dtypes/dtype.js';
import { invalidArgument } from '../errors.js';
import { type Bucket, type BucketMemory, GradientBuckets, type GradientHook } from './gradient-buckets.js';
import { type LayeredModel, modelParams } from './layered-model.js';
import type { TokenBatch } from './text-corpus.js';

/** What data parallelism needs of a communicator: an inline one or one on a progress engine. */
export interface TrainingComm extends BucketMemory {
  readonly rank: number;
  readonly size: number;
  allReduce(buffer: TypedArray, options?: ReduceOptions): Promise<void>;
  broadcast(buffer: TypedArray, options?: RootedOptions): Promise<void>;
}

export interface DataParallelOptions extends CallOptions {
  /** A TensorFlow.js optimizer (tf.train.sgd, tf.train.adam, ...): every rank applies the same averaged gradients. */
  optimizer: Optimizer;
  /** Largest gradient bucket, MiB of float32; 25 as PyTorch DDP's bucket_cap_mb. */
  bucketCapMb?: number;
  gradientHook?: GradientHook;
}

export interface StepOptions extends CallOptions {
  /**
   * false: add this batch's gradients to the ones kept since the last update and neither
   * communicate nor update (PyTorch's no_sync); the next synchronised step averages them all.
   */
  sync?: boolean;
}

/** One step, as this rank saw it. */
export interface StepReport {
  /** The step's loss, averaged over the ranks (on a no-sync step, this rank's own). */
  loss: number;
  forwardMs: number;
  /** Backward, including copying each gradient out of TensorFlow.js and compressing it. */
  backwardMs: number;
  /** Time spent waiting for gradient all-reduces after backward ended: communication compute did not hide. */
  exposedCommMs: number;
  optimizerMs: number;
  /** Gradient all-reduces issued, and the bytes they carried from this rank. */
  buckets: number;
  wireBytes: number;
}

export type Batch = TokenBatch | { readonly inputs: Tensor; readonly targets: Tensor };

const DEFAULT_BUCKET_CAP_MB = 25;

/**
 * Data parallelism in the manner of PyTorch's DistributedDataParallel: every rank holds the
 * whole model, computes gradients on its share of the batch, and the ranks average them.
 * Backward runs layer by layer; each bucket of gradients is all-reduced as soon as it is
 * complete, so on a communicator with a progress engine (`init({ progress: 'engine' })`) the
 * reduction of the last layers' gradients runs while the first layers are still in backward.
 */
export class DataParallel {
  private readonly buckets: GradientBuckets;
  private readonly lossBuffer: Float32Array;
  private readonly callDefaults: CallOptions;
  /** Backward passes whose gradients the buckets hold since the last update. */
  private microSteps = 0;

  readonly comm: TrainingComm;
  readonly model: LayeredModel;
  private readonly optimizer: Optimizer;

  constructor(comm: TrainingComm, model: LayeredModel, options: DataParallelOptions) {
    this.comm = comm;
    this.model = model;
    if (options?.optimizer === undefined || typeof options.optimizer.applyGradients !== 'function') {
      throw invalidArgument('DataParallel needs options.optimizer, a TensorFlow.js optimizer (tf.train.adam(...))', {
        argument: 'optimizer',
        rank: comm.rank,
      });
    }
    this.optimizer = options.optimizer;
    const capMb = options.bucketCapMb ?? DEFAULT_BUCKET_CAP_MB;
    this.buckets = new GradientBuckets(model, capMb * 2 ** 20, options.gradientHook ?? 'none', comm);
    this.lossBuffer = comm.alloc('float32', 1);
    this.callDefaults = { timeoutMs: options.timeoutMs, signal: options.signal };
  }

  /** Rank 0's parameters to every rank, so all start equal (as DDP does when it wraps a model). */
  async broadcastParameters(options: CallOptions = {}): Promise<void> {
    const params = modelParams(this.model);
    const flat = this.comm.alloc(
      'float32',
      params.reduce((n, p) => n + p.size, 0),
    );
    try {
      let offset = 0;
      if (this.comm.rank === 0) {
        for (const p of params) {
          flat.set(p.dataSync() as Float32Array, offset);
          offset += p.size;
        }
      }
      await this.comm.broadcast(flat, { ...this.callDefaults, ...options, root: 0 });
      offset = 0;
      const { tf } = this.model;
      for (const p of params) {
        tf.tidy(() => p.assign(tf.tensor(flat.subarray(offset, offset + p.size), p.shape, 'float32')));
        offset += p.size;
      }
    } finally {
      this.comm.free(flat);
    }
  }

  /** Forward, backward with gradients all-reduced bucket by bucket as they appear, then the optimizer's update. */
  async step(batch: Batch, options: StepOptions = {}): Promise<StepReport> {
    const sync = options.sync ?? true;
    if (typeof sync !== 'boolean') {
      throw invalidArgument(`step: sync must be a boolean, got ${String(sync)}`, {
        argument: 'sync',
        rank: this.comm.rank,
      });
    }
    const call: ReduceOptions = {
      ...this.callDefaults,
      timeoutMs: options.timeoutMs ?? this.callDefaults.timeoutMs,
      signal: options.signal ?? this.callDefaults.signal,
      op: 'avg',
    };
    const { tf, layers } = this.model;
    const { inputs, targets } = this.toTensors(batch);
    const inFlight: Promise<void>[] = [];
    let wireBytes = 0;
    const issue = (buffer: TypedArray) => {
      wireBytes += buffer.byteLength;
      // Failures are collected after backward, so none is left unobserved meanwhile.
      const call$ = this.comm.allReduce(buffer, call);
      call$.catch(() => {});
      inFlight.push(call$);
    };
    const activations: Tensor[] = [inputs];
    let localLoss: number;
    let forwardMs: number;
    let backwardMs: number;
    const started = performance.now();
    try {
      for (const layer of layers) {
        const x = activations[activations.length - 1];
        activations.push(tf.tidy(() => layer.forward(x, layer.params)));
      }
      const output = activations[activations.length - 1];
      const { value, grads } = tf.tidy(() =>
        tf.valueAndGrads((out: Tensor) => this.model.loss(out, targets))([output]),
      );
      localLoss = (value.dataSync() as Float32Array)[0];
      value.dispose();
      if (sync) {
        this.lossBuffer[0] = localLoss;
        issue(this.lossBuffer);
      }
      const afterForward = performance.now();
      forwardMs = afterForward - started;

      const accumulate = this.microSteps > 0;
      let dy: Tensor = grads[0];
      for (let i = layers.length - 1; i >= 0; i--) {
        const layer = layers[i];
        const x = activations[i];
        const upstream = dy;
        const vjp =
          i > 0
            ? tf.tidy(() =>
                tf.grads((input: Tensor, ...p: Tensor[]) => layer.forward(input, p))([x, ...layer.params], upstream),
              )
            : tf.tidy(() => tf.grads((...p: Tensor[]) => layer.forward(x, p))([...layer.params], upstream));
        upstream.dispose();
        const paramGrads = i > 0 ? vjp.slice(1) : vjp;
        if (i > 0) dy = vjp[0];
        layer.params.forEach((param, j) => {
          const full = this.buckets.write(param, paramGrads[j].dataSync() as Float32Array, accumulate);
          paramGrads[j].dispose();
          if (full !== undefined && sync) this.send(full, issue);
        });
      }
      backwardMs = performance.now() - afterForward;
    } finally {
      for (const a of activations) a.dispose();
      targets.dispose();
      this.buckets.rearm();
    }
    this.microSteps++;

    const waitFrom = performance.now();
    const settled = await Promise.allSettled(inFlight);
    const failed = settled.find((s) => s.status === 'rejected');
    if (failed !== undefined) throw (failed as PromiseRejectedResult).reason;
    const exposedCommMs = performance.now() - waitFrom;
    const loss = sync ? this.lossBuffer[0] : localLoss;
    if (!sync) return { loss, forwardMs, backwardMs, exposedCommMs: 0, optimizerMs: 0, buckets: 0, wireBytes: 0 };

    const optimizerFrom = performance.now();
    this.update();
    const optimizerMs = performance.now() - optimizerFrom;
    return { loss, forwardMs, backwardMs, exposedCommMs, optimizerMs, buckets: inFlight.length - 1, wireBytes };
  }

  /** Bytes this rank keeps for gradients (buckets and their compressed copies). */
  get gradientBytes(): number {
    return this.buckets.bytes;
  }

  /** Returns the buckets' shared memory to the communicator; the object is unusable after. */
  dispose(): void {
    this.buckets.dispose();
    this.comm.free(this.lossBuffer);
  }

  private send(bucket: Bucket, issue: (buffer: TypedArray) => void): void {
    this.buckets.encode(bucket);
    issue(bucket.wire);
  }

  private update(): void {
    const { tf } = this.model;
    const scale = 1 / this.microSteps;
    const named: NamedTensorMap = {};
    for (const bucket of this.buckets.buckets) {
      this.buckets.decode(bucket);
      if (scale !== 1) for (let i = 0; i < bucket.grads.length; i++) bucket.grads[i] *= scale;
    }
    for (const param of modelParams(this.model)) {
      named[param.name] = tf.tensor(this.buckets.gradientOf(param), param.shape, 'float32');
    }
    this.optimizer.applyGradients(named);
    for (const tensor of Object.values(named)) tensor.dispose();
    this.microSteps = 0;
  }

  private toTensors(batch: Batch): { inputs: Tensor; targets: Tensor } {
    const { tf } = this.model;
    if ('rows' in batch) {
      const shape: [number, number] = [batch.rows, batch.seqLen];
      return { inputs: tf.tensor2d(batch.inputs, shape, 'int32'), targets: tf.tensor2d(batch.targets, shape, 'int32') };
    }
    return { inputs: tf.clone(batch.inputs), targets: tf.clone(batch.targets) };
  }
}
