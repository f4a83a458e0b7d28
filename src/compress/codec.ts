import type { CodecSimd } from '../kernels/codec-simd.js';
import type { CompressionSpec } from './compression-spec.js';
import { blockIntCodec } from './block-int-codec.js';
import { float16Codec } from './float16-codec.js';
import { scaledFloat8Codec } from './scaled-float8-codec.js';

/**
 * Encodes float32 data for the wire and back. Encoded chunks are whole multiples of 4 bytes, so
 * a chunk that starts aligned keeps its float32 scales aligned, and the next chunk too.
 */
export interface Codec {
  readonly spec: CompressionSpec;
  /** Bytes `count` elements take encoded. */
  encodedBytes(count: number): number;
  /** Writes src's encoding to dst (encodedBytes(src.length) bytes, 4-byte aligned). */
  encode(src: Float32Array, dst: Uint8Array): void;
  decode(src: Uint8Array, dst: Float32Array): void;
  /** acc[i] += decoded[i], in float32: how a reduction takes in a peer's contribution. */
  accumulate(src: Uint8Array, acc: Float32Array): void;
  /**
   * A bound on |decode(encode(x)) - x| for an element x of a block whose largest finite
   * magnitude is blockMax (the whole chunk for formats without blocks). Infinity where the
   * format overflows (fp16 beyond 65504).
   */
  elementError(x: number, blockMax: number): number;
}

/**
 * The codec of a spec; with `simd` (an arena's codec loops), arrays in that arena are encoded
 * and decoded in WebAssembly SIMD (int8, int4, bf16, fp16), the rest in JavaScript.
 */
export function codecFor(spec: CompressionSpec, simd?: CodecSimd): Codec {
  switch (spec.format) {
    case 'fp16':
    case 'bf16':
      return float16Codec(spec, simd);
    case 'fp8e4m3':
    case 'fp8e5m2':
      return scaledFloat8Codec(spec);
    case 'int8':
    case 'int4':
      return blockIntCodec(spec, simd);
  }
}

/** Rounds a byte count up to whole 4-byte words. */
export const wordAligned = (bytes: number): number => (bytes + 3) & ~3;

/** The largest finite magnitude of src[start, end): what a block's scale is taken from. */
export function finiteAbsMax(src: Float32Array, start: number, end: number): number {
  let max = 0;
  for (let i = start; i < end; i++) {
    const a = Math.abs(src[i]);
    if (a > max && a !== Number.POSITIVE_INFINITY) max = a;
  }
  return max;
}
