import type { NamedTensorMap, Optimizer, Variable } from '@tensorflow/tfjs';
import { type CallOptions, callOptionsOf } from '../comm/call-options.js';
import { settleAll } from '../comm/settle-all.js';
import { invalidArgument } from '../errors.js';
import type { GradientBuckets } from './gradient-buckets.js';
import { readValues } from './tensor-values.js';
import type { TrainingComm } from './gradient-sync.js';
import type { Tf } from './load-tf.js';

/**
 * ZeRO-style sharding of the update (DeepSpeed's stage 1, with reduce-scattered gradients):
 * each bucket's averaged gradients arrive reduce-scattered, so rank r holds block r of each;
 * rank r keeps the master copy and the optimizer's state of that block only, updates it, and
 * an all-gather of every bucket's parameters gives each rank the whole model again. The
 * optimizer's state per rank is 1/size of the unsharded one; the update's arithmetic is the
 * same (an element-wise optimizer such as Adam or SGD), so the weights are too.
 */
export class ZeroShards {
  private readonly tf: Tf;
  private readonly comm: TrainingComm;
  private readonly buckets: GradientBuckets;
  private readonly optimizer: Optimizer;
  /** Per bucket: the parameters in the bucket's layout (all-gathered after each update), and this rank's master block. */
  private shards: { params: Float32Array; master: Variable }[] | undefined;

  constructor(tf: Tf, comm: TrainingComm, buckets: GradientBuckets, optimizer: Optimizer) {
    this.tf = tf;
    this.comm = comm;
    this.buckets = buckets;
    this.optimizer = optimizer;
  }

  /**
   * Updates this rank's blocks with their averaged gradients, then all-gathers the parameters
   * into the model; returns the time spent waiting for the all-gathers.
   */
  async update(scale: number, call: CallOptions): Promise<number> {
    const { tf, comm } = this;
    const shards = this.ensureShards();
    // One call for every block: TensorFlow.js optimizers keep their state by the position of a variable in the call.
    const gradients: NamedTensorMap = {};
    this.buckets.buckets.forEach((bucket, b) => {
      const block = bucket.grads.length / comm.size;
      // Only this rank's block of the reduce-scatter's result is its to read.
      this.buckets.mean(bucket, scale, comm.rank * block, (comm.rank + 1) * block);
      const grad = bucket.grads.subarray(comm.rank * block, (comm.rank + 1) * block);
      gradients[shards[b].master.name] = tf.tensor(grad, [block], 'float32');
    });
    this.optimizer.applyGradients(gradients);
    for (const tensor of Object.values(gradients)) tensor.dispose();
    const gathers = shards.map(({ params, master }) => {
      params.set(readValues(tf, master), comm.rank * master.size);
      return comm.allGather(params, callOptionsOf(call));
    });
    const waitFrom = performance.now();
    await settleAll(gathers);
    const waitMs = performance.now() - waitFrom;
    this.buckets.buckets.forEach((bucket, b) => {
      const { params } = shards[b];
      bucket.params.forEach((param, i) => {
        const values = params.subarray(bucket.offsets[i], bucket.offsets[i] + param.size);
        tf.tidy(() => param.assign(tf.tensor(values, param.shape, 'float32')));
      });
    });
    return waitMs;
  }

  /** This rank's master blocks, for a checkpoint. */
  masters(): Float32Array[] {
    return this.ensureShards().map(({ master }) => master.dataSync() as Float32Array);
  }

  /** Puts a checkpoint's master blocks back (after the model's parameters are back). */
  restoreMasters(blocks: readonly Float32Array[]): void {
    this.dispose();
    const shards = this.ensureShards();
    if (blocks.length !== shards.length || blocks.some((b, i) => b.length !== shards[i].master.size)) {
      throw invalidArgument(
        `the checkpoint's ZeRO blocks (${blocks.map((b) => b.length)}) are not this rank's (${shards.map((s) => s.master.size)}): was it written with other ranks or buckets?`,
        { rank: this.comm.rank, argument: 'path' },
      );
    }
    for (const [b, { master }] of shards.entries())
      master.assign(this.tf.tensor(blocks[b], [blocks[b].length], 'float32'));
  }

  /** Bytes of this rank's master blocks and of the all-gather buffers. */
  get bytes(): number {
    return (this.shards ?? []).reduce((n, s) => n + s.master.size * 4 + s.params.byteLength, 0);
  }

  dispose(): void {
    for (const { params, master } of this.shards ?? []) {
      this.comm.free(params);
      master.dispose();
    }
    this.shards = undefined;
  }

  /** The master blocks, from the parameters as they are at the first update (equal on every rank after the broadcast). */
  private ensureShards(): { params: Float32Array; master: Variable }[] {
    if (this.shards !== undefined) return this.shards;
    const { tf, comm } = this;
    this.shards = this.buckets.buckets.map((bucket) => {
      const params = comm.alloc('float32', bucket.grads.length).fill(0);
      for (const [i, param] of bucket.params.entries()) params.set(param.dataSync() as Float32Array, bucket.offsets[i]);
      const block = params.length / comm.size;
      const master = tf.variable(
        tf.tensor(params.slice(comm.rank * block, (comm.rank + 1) * block), [block], 'float32'),
      );
      return { params, master };
    });
    return this.shards;
  }
}
