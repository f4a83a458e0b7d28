import type { Variable } from '@tensorflow/tfjs';
import type { DType, DTypeArrayMap, TypedArray } from '../dtypes/dtype.js';
import { bfloat16ToFloat, floatToBfloat16, floatToHalf, halfDecodeTable } from '../dtypes/half.js';
import { invalidArgument } from '../errors.js';
import { TAIL_PIECE_BYTES } from '../sim/backward-overlap.js';
import type { LayeredModel } from './layered-model.js';

/** What gradients cross the wire as: 'none' sends float32; 'fp16'/'bf16' halve the bytes (PyTorch's fp16/bf16 compress hooks). */
export type GradientHook = 'none' | 'fp16' | 'bf16';
export const GRADIENT_HOOKS: readonly GradientHook[] = ['none', 'fp16', 'bf16'];

/** Where a bucket's arrays come from: a communicator's alloc, so a progress engine reduces them in place. */
export interface BucketMemory {
  alloc<D extends DType>(dtype: D, count: number): DTypeArrayMap[D];
  free(buffer: TypedArray): void;
}

/**
 * The last bucket, `params` in backward's order, cut where a layer ends once a piece holds
 * TAIL_PIECE_BYTES: nothing after it hides its all-reduce, so its layers' gradients go out as
 * their backward ends rather than wait for the model's first layer.
 */
function splitAtLayers(params: readonly Variable[], layerOf: ReadonlyMap<Variable, number>): Variable[][] {
  const pieces: Variable[][] = [];
  let piece: Variable[] = [];
  let bytes = 0;
  for (const param of params) {
    const previous = piece[piece.length - 1];
    if (bytes >= TAIL_PIECE_BYTES && layerOf.get(param) !== layerOf.get(previous)) {
      pieces.push(piece);
      piece = [];
      bytes = 0;
    }
    piece.push(param);
    bytes += param.size * 4;
  }
  pieces.push(piece);
  return pieces;
}

export interface Bucket {
  readonly params: readonly Variable[];
  readonly offsets: readonly number[];
  /** The bucket's gradients, float32, in the order of `params`. */
  readonly grads: Float32Array;
  /** What goes on the wire when a hook compresses (float16 or bfloat16 bits), else `grads` itself. */
  readonly wire: Float32Array | Uint16Array;
  /** Parameters whose gradient this backward pass has not written yet. */
  missing: number;
}

/**
 * Gradients grouped into buckets of at most `capBytes` of float32 in reverse layer order (the
 * order backward produces them, as PyTorch DDP's buckets), so each bucket can be all-reduced as
 * soon as its last gradient exists. A parameter larger than the cap gets a bucket of its own.
 * The last bucket is cut at layer boundaries (TAIL_PIECE_BYTES).
 */
export class GradientBuckets {
  readonly buckets: Bucket[] = [];
  private readonly place = new Map<Variable, { bucket: Bucket; offset: number }>();
  readonly hook: GradientHook;
  private readonly memory: BucketMemory;

  /** Each bucket's length is a multiple of this (zeros after the last gradient), so it splits into equal shards. */
  private readonly multipleOf: number;

  constructor(model: LayeredModel, capBytes: number, hook: GradientHook, memory: BucketMemory, multipleOf = 1) {
    this.multipleOf = multipleOf;
    this.hook = hook;
    this.memory = memory;
    if (!(capBytes > 0))
      throw invalidArgument(`bucketCapMb must be positive, got ${capBytes / 2 ** 20}`, { argument: 'bucketCapMb' });
    if (!GRADIENT_HOOKS.includes(hook)) {
      throw invalidArgument(`gradientHook must be one of ${GRADIENT_HOOKS.join(', ')}, got ${String(hook)}`, {
        argument: 'gradientHook',
      });
    }
    const groups: Variable[][] = [];
    let group: Variable[] = [];
    let elements = 0;
    const layerOf = new Map<Variable, number>();
    for (const [index, layer] of [...model.layers].reverse().entries()) {
      for (const param of layer.params) {
        layerOf.set(param, index);
        if (elements > 0 && (elements + param.size) * 4 > capBytes) {
          groups.push(group);
          group = [];
          elements = 0;
        }
        group.push(param);
        elements += param.size;
      }
    }
    if (group.length > 0) groups.push(...splitAtLayers(group, layerOf));
    for (const params of groups) this.addBucket(params);
  }

  private addBucket(params: Variable[]): void {
    const offsets: number[] = [];
    let elements = 0;
    for (const p of params) {
      offsets.push(elements);
      elements += p.size;
    }
    elements = Math.ceil(elements / this.multipleOf) * this.multipleOf;
    const grads = this.memory.alloc('float32', elements);
    const wire =
      this.hook === 'fp16'
        ? this.memory.alloc('float16', elements)
        : this.hook === 'bf16'
          ? this.memory.alloc('bfloat16', elements)
          : grads;
    const bucket: Bucket = { params, offsets, grads, wire, missing: params.length };
    this.buckets.push(bucket);
    for (const [i, p] of params.entries()) this.place.set(p, { bucket, offset: offsets[i] });
  }

  /**
   * Writes (or, while accumulating, adds) one parameter's gradient; returns its bucket when
   * that was the bucket's last missing gradient.
   */
  write(param: Variable, gradient: Float32Array, accumulate: boolean): Bucket | undefined {
    const { bucket, offset } = this.place.get(param) as { bucket: Bucket; offset: number };
    if (accumulate) {
      const g = bucket.grads;
      for (let i = 0; i < gradient.length; i++) g[offset + i] += gradient[i];
    } else {
      bucket.grads.set(gradient, offset);
    }
    bucket.missing--;
    return bucket.missing === 0 ? bucket : undefined;
  }

  /** Fills the wire array from the gradients (a hook's compression). */
  encode(bucket: Bucket): void {
    if (this.hook === 'none') return;
    const { grads, wire } = bucket;
    const encode = this.hook === 'fp16' ? floatToHalf : floatToBfloat16;
    for (let i = 0; i < grads.length; i++) wire[i] = encode(grads[i]);
  }

  /**
   * The reduced sums of [from, to) as the gradients' mean: read back from the wire array (a
   * hook's decompression) and multiplied by `scale` (1 / the ranks and passes summed), in one pass.
   */
  mean(bucket: Bucket, scale: number, from = 0, to = bucket.grads.length): void {
    const { grads, wire } = bucket;
    if (this.hook === 'fp16') {
      const table = halfDecodeTable();
      for (let i = from; i < to; i++) grads[i] = table[wire[i]] * scale;
    } else if (this.hook === 'bf16') {
      for (let i = from; i < to; i++) grads[i] = bfloat16ToFloat(wire[i]) * scale;
    } else if (scale !== 1) {
      for (let i = from; i < to; i++) grads[i] *= scale;
    }
  }

  /** A parameter's gradient, a view into its bucket. */
  gradientOf(param: Variable): Float32Array {
    const { bucket, offset } = this.place.get(param) as { bucket: Bucket; offset: number };
    return bucket.grads.subarray(offset, offset + param.size);
  }

  /** Ready for the next backward pass. */
  rearm(): void {
    for (const bucket of this.buckets) bucket.missing = bucket.params.length;
  }

  get bytes(): number {
    return this.buckets.reduce((n, b) => n + b.grads.byteLength + (b.wire === b.grads ? 0 : b.wire.byteLength), 0);
  }

  dispose(): void {
    for (const bucket of this.buckets) {
      this.memory.free(bucket.grads);
      if (bucket.wire !== bucket.grads) this.memory.free(bucket.wire);
    }
    this.buckets.length = 0;
    this.place.clear();
  }
}
