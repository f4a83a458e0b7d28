import type { NamedTensorMap, Optimizer, Tensor, Variable } from '@tensorflow/tfjs';
import {
  type CallOptions,
  type CollectiveOptions,
  type ReduceOptions,
  type RootedOptions,
  callOptionsOf,
} from '../comm/call-options.js';
import { settleAll } from '../comm/settle-all.js';
import type { TypedArray } from '../dtypes/dtype.js';
import { ErrorCode, TscclError, invalidArgument } from '../errors.js';
import { type CheckpointEntry, readCheckpoint, writeCheckpoint } from './checkpoint-file.js';
import { type Bucket, type BucketMemory, GradientBuckets, type GradientHook } from './gradient-buckets.js';
import {
  type CompressionFormat,
  type CompressionOption,
  type CompressionSpec,
  parseCompression,
} from '../compress/compression-spec.js';
import type { LayeredModel } from './layered-model.js';
import { ZeroShards } from './zero-shards.js';
import { readValues } from './tensor-values.js';

/** What training needs of a communicator: an inline one or one on a progress engine. */
export interface TrainingComm extends BucketMemory {
  readonly rank: number;
  readonly size: number;
  allReduce(buffer: TypedArray, options?: ReduceOptions): Promise<void>;
  reduceScatter(buffer: TypedArray, options?: ReduceOptions): Promise<void>;
  allGather(buffer: TypedArray, options?: CollectiveOptions): Promise<void>;
  broadcast(buffer: TypedArray, options?: RootedOptions): Promise<void>;
  send(buffer: TypedArray, peer: number, options?: CallOptions): Promise<void>;
  recv(buffer: TypedArray, peer: number, options?: CallOptions): Promise<void>;
}

export interface GradientSyncOptions extends CallOptions {
  /** A TensorFlow.js optimizer (tf.train.sgd, tf.train.adam, ...): every rank applies the same averaged gradients. */
  optimizer: Optimizer;
  /** Largest gradient bucket, MiB of float32; 25 as PyTorch DDP's bucket_cap_mb. */
  bucketCapMb?: number;
  gradientHook?: GradientHook;
  /**
   * The library's wire compression of gradient buckets ('int8', 'bf16', ... or { format,
   * blockSize }; docs/COMPRESSION.md): each rank's gradients quantised once, the sums once. Takes
   * the place of gradientHook, which must then be 'none'.
   */
  compression?: CompressionFormat | { format: CompressionFormat; blockSize?: number };
  /** With compression: a residual per bucket carries each update's rounding into the next (error feedback). */
  errorFeedback?: boolean;
  /**
   * Shard the update over the ranks (ZeRO): gradients reduce-scattered instead of all-reduced,
   * each rank keeping the optimizer state of its 1/size of the parameters, parameters
   * all-gathered after the update.
   */
  zero?: boolean;
}

/** What a rank holds for training, in bytes. */
export interface TrainingMemory {
  parameters: number;
  /** Gradient buckets, their compressed copies and error-feedback residuals. */
  gradients: number;
  /** The optimizer's state (Adam's moments), of the whole model or, under ZeRO, of this rank's shard. */
  optimizerState: number;
  /** Under ZeRO: this rank's master blocks and the all-gather buffers. */
  shards: number;
}

/** What one update's gradient communication did on this rank. */
export interface SyncReport {
  /** Time spent waiting for gradient all-reduces after the last backward ended: communication compute did not hide. */
  exposedCommMs: number;
  optimizerMs: number;
  /** Gradient all-reduces issued, and the bytes they carried from this rank. */
  buckets: number;
  wireBytes: number;
}

const DEFAULT_BUCKET_CAP_MB = 25;

/**
 * The data-parallel half of training: gradients gathered into buckets over one or more backward
 * passes; on the pass that ends an update, each bucket is all-reduced (averaged over the
 * communicator's ranks) as soon as its last gradient exists; then the optimizer applies the
 * mean over ranks and passes. With a communicator of one rank it only accumulates and updates.
 */
export class GradientSync {
  readonly comm: TrainingComm;
  private readonly buckets: GradientBuckets;
  private readonly zero: ZeroShards | undefined;
  private readonly optimizer: Optimizer;
  private readonly params: readonly Variable[];
  private readonly tf: LayeredModel['tf'];
  private readonly callDefaults: CallOptions;
  private inFlight: Promise<void>[] = [];
  private readonly filled: Bucket[] = [];
  private wireBytes = 0;
  private bucketCalls = 0;
  /** Backward passes whose gradients the buckets hold since the last update. */
  private passes = 0;
  private syncing = false;
  private readonly compression: CompressionSpec | undefined;
  private readonly errorFeedback: boolean;
  private readonly residuals = new Map<Bucket, Float32Array>();

  constructor(comm: TrainingComm, model: LayeredModel, options: GradientSyncOptions) {
    if (options?.optimizer === undefined || typeof options.optimizer.applyGradients !== 'function') {
      throw invalidArgument('training needs options.optimizer, a TensorFlow.js optimizer (tf.train.adam(...))', {
        argument: 'optimizer',
        rank: comm.rank,
      });
    }
    this.comm = comm;
    this.optimizer = options.optimizer;
    this.tf = model.tf;
    this.params = model.layers.flatMap((layer) => layer.params);
    const capMb = options.bucketCapMb ?? DEFAULT_BUCKET_CAP_MB;
    const zero = options.zero ?? false;
    if (typeof zero !== 'boolean')
      throw invalidArgument(`zero must be a boolean, got ${String(zero)}`, { argument: 'zero', rank: comm.rank });
    this.buckets = new GradientBuckets(
      model,
      capMb * 2 ** 20,
      options.gradientHook ?? 'none',
      comm,
      zero ? comm.size : 1,
    );
    this.zero = zero ? new ZeroShards(model.tf, comm, this.buckets, options.optimizer) : undefined;
    this.compression =
      options.compression === undefined ? undefined : parseCompression(options.compression, { rank: comm.rank });
    this.errorFeedback = options.errorFeedback ?? false;
    if (this.compression !== undefined && (options.gradientHook ?? 'none') !== 'none')
      throw invalidArgument(
        `Rank ${comm.rank}: gradientHook '${options.gradientHook}' and compression '${this.compression.format}' both compress gradients: choose one`,
        { argument: 'compression', rank: comm.rank },
      );
    if (typeof this.errorFeedback !== 'boolean' || (this.errorFeedback && this.compression === undefined))
      throw invalidArgument(`Rank ${comm.rank}: errorFeedback (true or false) needs compression to feed back`, {
        argument: 'errorFeedback',
        rank: comm.rank,
      });
    this.callDefaults = { timeoutMs: options.timeoutMs, signal: options.signal };
  }

  /** Rank 0's parameters to every rank of the communicator, so all start equal. */
  async broadcastParameters(options: CallOptions = {}): Promise<void> {
    const { tf, params } = this;
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
      for (const p of params) {
        const slice = flat.subarray(offset, offset + p.size);
        tf.tidy(() => p.assign(tf.tensor(slice, p.shape, 'float32')));
        offset += p.size;
      }
    } finally {
      this.comm.free(flat);
    }
  }

  /** Rank 0's parameters and optimizer state to every rank (after a shrink, when survivors may have stopped at different points). */
  async broadcastState(options: CallOptions = {}): Promise<void> {
    await this.broadcastParameters(options);
    const { tf, comm } = this;
    const weights = await this.optimizer.getWeights();
    const sizes = new Int32Array([weights.length, weights.reduce((n, w) => n + w.tensor.size, 0)]);
    const mine = sizes.join();
    await comm.broadcast(sizes, { ...this.callDefaults, ...callOptionsOf(options), root: 0 });
    if (sizes.join() !== mine) {
      throw new TscclError(
        ErrorCode.MISMATCH,
        `Rank ${comm.rank}: rank 0's optimizer holds ${sizes[0]} tensors of ${sizes[1]} numbers, this rank's ${mine.replace(',', ' of ')}`,
        { rank: comm.rank },
      );
    }
    const flat = new Float32Array(sizes[1]);
    let offset = 0;
    for (const w of weights) {
      flat.set(await w.tensor.data(), offset);
      offset += w.tensor.size;
    }
    await comm.broadcast(flat, { ...this.callDefaults, ...callOptionsOf(options), root: 0 });
    offset = 0;
    const values = weights.map((w) => {
      const tensor = tf.tensor(flat.subarray(offset, offset + w.tensor.size), w.tensor.shape, 'float32');
      offset += w.tensor.size;
      return { name: w.name, tensor };
    });
    if (values.length > 0) await this.optimizer.setWeights(values);
  }

  /** Starts a backward pass; `sync` marks the pass that ends an update (its buckets are sent as they fill). */
  beginPass(sync: boolean, options: CallOptions = {}): void {
    this.syncing = sync;
    this.currentCall = { ...this.callDefaults, ...callOptionsOf(options), op: 'avg' };
  }

  private currentCall: ReduceOptions = {};

  /** Issues an average all-reduce that the update waits for (a loss, a metric) on the same communicator. */
  issue(buffer: TypedArray, options: CallOptions = {}): void {
    this.track(this.comm.allReduce(buffer, { ...this.currentCall, ...callOptionsOf(options), op: 'avg' }), buffer);
  }

  /**
   * A full bucket's gradients summed over the ranks (reduce-scattered under ZeRO): summed, not
   * averaged, because the update scales by 1 / (passes x ranks) in one multiplying pass, cheaper
   * than the dividing pass an 'avg' call runs after its sum (bench/RESULTS.md, "Training").
   */
  private issueBucket(bucket: Bucket): void {
    const options: ReduceOptions = { ...this.currentCall, op: 'sum' };
    if (this.compression !== undefined) options.compression = this.compressionOf(bucket);
    const call =
      this.zero === undefined
        ? this.comm.allReduce(bucket.wire, options)
        : this.comm.reduceScatter(bucket.wire, options);
    this.track(call, bucket.wire);
  }

  /** The bucket's compression, with its residual when error feedback is on (zeros at first). */
  private compressionOf(bucket: Bucket): CompressionOption {
    const { format, blockSize } = this.compression!;
    if (!this.errorFeedback) return { format, blockSize };
    let residual = this.residuals.get(bucket);
    if (residual === undefined) {
      residual = this.comm.alloc('float32', bucket.wire.length);
      residual.fill(0);
      this.residuals.set(bucket, residual);
    }
    return { format, blockSize, residual };
  }

  private track(call: Promise<void>, buffer: TypedArray): void {
    this.wireBytes += buffer.byteLength;
    // Failures are collected by finishPass, so none is left unobserved meanwhile.
    call.catch(() => {});
    this.inFlight.push(call);
  }

  /** One layer's parameter gradients, in the layer's parameter order, then issueFilled(). */
  add(params: readonly Variable[], grads: readonly Tensor[]): void {
    this.write(params, grads);
    this.issueFilled();
  }

  /**
   * Writes (and, with compression, encodes) one layer's parameter gradients, in the layer's
   * parameter order, into their buckets; the tensors are disposed. On a synchronising pass the
   * buckets this fills wait for issueFilled(), so a trace's compute span can end before their
   * all-reduces start: ended after it, they are the ones the rank's wait is for.
   */
  write(params: readonly Variable[], grads: readonly Tensor[]): void {
    const accumulate = this.passes > 0;
    params.forEach((param, j) => {
      const full = this.buckets.write(param, readValues(this.tf, grads[j]), accumulate);
      grads[j].dispose();
      if (full !== undefined && this.syncing) {
        this.buckets.encode(full);
        this.filled.push(full);
      }
    });
  }

  /** Issues the all-reduces of the buckets write() filled. */
  issueFilled(): void {
    for (const full of this.filled) {
      this.issueBucket(full);
      this.bucketCalls++;
    }
    this.filled.length = 0;
  }

  /**
   * Ends a backward pass; on a synchronising one, waits for its all-reduces and applies the
   * optimizer to the mean gradients. A failed all-reduce rejects with its error.
   */
  async finishPass(): Promise<SyncReport> {
    this.buckets.rearm();
    this.passes++;
    const waitFrom = performance.now();
    const calls = this.inFlight;
    const { bucketCalls, wireBytes } = this;
    this.inFlight = [];
    this.wireBytes = 0;
    this.bucketCalls = 0;
    await settleAll(calls);
    const exposedCommMs = performance.now() - waitFrom;
    if (!this.syncing) return { exposedCommMs, optimizerMs: 0, buckets: 0, wireBytes: 0 };
    const optimizerFrom = performance.now();
    if (this.zero !== undefined) {
      const passes = this.passes;
      this.passes = 0;
      const gatherMs = await this.zero.update(1 / (passes * this.comm.size), this.currentCall);
      const optimizerMs = performance.now() - optimizerFrom - gatherMs;
      return { exposedCommMs: exposedCommMs + gatherMs, optimizerMs, buckets: bucketCalls, wireBytes };
    }
    this.update();
    return { exposedCommMs, optimizerMs: performance.now() - optimizerFrom, buckets: bucketCalls, wireBytes };
  }

  /** What this rank holds for training (the optimizer's state is read from the optimizer, so this waits for it). */
  async memory(): Promise<TrainingMemory> {
    const weights = await this.optimizer.getWeights();
    return {
      parameters: this.params.reduce((n, p) => n + p.size * 4, 0),
      gradients: this.buckets.bytes + [...this.residuals.values()].reduce((n, r) => n + r.byteLength, 0),
      optimizerState: weights.reduce((n, w) => n + w.tensor.size * 4, 0),
      shards: this.zero?.bytes ?? 0,
    };
  }

  /**
   * Saves the training state: the parameters, the optimizer's state and, under ZeRO, this rank's
   * master blocks. Replicas hold the same state, so rank 0 writes `path` alone; under ZeRO each
   * rank writes its own share to `path.rank<r>`. Resolves on every rank once every file is
   * written, and rejects on every rank if one could not be.
   */
  async save(path: string, step: number, call: CallOptions = {}): Promise<void> {
    const sharded = this.zero !== undefined;
    let failure: unknown;
    if (sharded || this.comm.rank === 0) {
      try {
        await writeCheckpoint(sharded ? `${path}.rank${this.comm.rank}` : path, {
          step,
          entries: await this.checkpointEntries(),
        });
      } catch (err) {
        failure = err;
      }
    }
    const failed = new Int32Array([failure === undefined ? 0 : 1]);
    await this.comm.allReduce(failed, { ...this.callDefaults, ...callOptionsOf(call), op: 'max' });
    if (failure !== undefined) throw failure;
    if (failed[0] !== 0) {
      throw new TscclError(
        ErrorCode.RANK_FAILED,
        `Rank ${this.comm.rank}: another rank could not write its part of checkpoint ${path}`,
        {
          rank: this.comm.rank,
          argument: 'path',
        },
      );
    }
  }

  /** Loads what `save` wrote into this rank's model, optimizer and shards; returns the step saved with it. */
  async load(path: string): Promise<number> {
    const checkpoint = await readCheckpoint(this.zero !== undefined ? `${path}.rank${this.comm.rank}` : path);
    const { tf, params } = this;
    const of = (kind: CheckpointEntry['kind']) =>
      checkpoint.entries.filter((e) => e.kind === kind).sort((a, b) => a.index - b.index);
    const saved = of('param');
    const mismatch =
      saved.length !== params.length ? -1 : saved.findIndex((e, i) => e.shape.join() !== params[i].shape.join());
    if (saved.length !== params.length || mismatch >= 0) {
      throw invalidArgument(
        `Rank ${this.comm.rank}: checkpoint ${path} holds ${saved.length} parameters, this model ${params.length}${mismatch >= 0 ? `; parameter ${mismatch} is [${saved[mismatch].shape}] there, [${params[mismatch].shape}] here` : ''}`,
        { rank: this.comm.rank, argument: 'path' },
      );
    }
    for (const [i, e] of saved.entries())
      tf.tidy(() => params[i].assign(tf.tensor(e.values, e.shape as number[], 'float32')));
    const state = of('optimizer');
    if (state.length > 0)
      await this.optimizer.setWeights(
        state.map((e) => ({ name: e.name, tensor: tf.tensor(e.values, e.shape as number[], 'float32') })),
      );
    this.zero?.restoreMasters(of('master').map((e) => e.values));
    return checkpoint.step;
  }

  private async checkpointEntries(): Promise<CheckpointEntry[]> {
    const entries: CheckpointEntry[] = this.params.map((p, index) => ({
      kind: 'param',
      index,
      name: p.name,
      shape: p.shape,
      values: p.dataSync() as Float32Array,
    }));
    for (const [index, w] of (await this.optimizer.getWeights()).entries()) {
      entries.push({
        kind: 'optimizer',
        index,
        name: w.name,
        shape: w.tensor.shape,
        values: Float32Array.from(await w.tensor.data()),
      });
    }
    for (const [index, values] of (this.zero?.masters() ?? []).entries()) {
      entries.push({ kind: 'master', index, name: `master${index}`, shape: [values.length], values });
    }
    return entries;
  }

  dispose(): void {
    this.zero?.dispose();
    this.buckets.dispose();
    for (const residual of this.residuals.values()) this.comm.free(residual);
    this.residuals.clear();
  }

  private update(): void {
    const { tf } = this;
    const scale = 1 / (this.passes * this.comm.size);
    for (const bucket of this.buckets.buckets) this.buckets.mean(bucket, scale);
    const named: NamedTensorMap = {};
    for (const param of this.params)
      named[param.name] = tf.tensor(this.buckets.gradientOf(param), param.shape, 'float32');
    this.optimizer.applyGradients(named);
    for (const tensor of Object.values(named)) tensor.dispose();
    this.passes = 0;
  }
}
