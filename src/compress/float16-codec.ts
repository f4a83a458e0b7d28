import { bfloat16FromFloatBits, halfDecodeTable, halfFromFloatBits } from '../dtypes/half.js';
import type { CodecSimd } from '../kernels/codec-simd.js';
import type { Codec } from './codec.js';
import { wordAligned } from './codec.js';
import type { CompressionSpec } from './compression-spec.js';

/**
 * fp16 and bf16 casts, 2 bytes an element, rounded to nearest even. bf16 keeps float32's range;
 * fp16 turns magnitudes beyond 65504 into infinities and those below 2^-24 into zero, as every
 * fp16 cast does (the blockwise formats scale instead).
 */
export function float16Codec(spec: CompressionSpec, simd?: CodecSimd): Codec {
  const brain = spec.format === 'bf16';
  // Elements (a multiple of 8) the SIMD loops take when both arrays are in their arena.
  const simdCount = (a: ArrayBufferView, b: ArrayBufferView, count: number) =>
    simd?.contains(a) && simd.contains(b) ? count & ~7 : 0;
  const halves = (bytes: Uint8Array, count: number) => new Uint16Array(bytes.buffer, bytes.byteOffset, count);
  const bitsOf = (f: Float32Array) => new Uint32Array(f.buffer, f.byteOffset, f.length);
  const table = halfDecodeTable();

  const encode = (src: Float32Array, dst: Uint8Array) => {
    const bits = bitsOf(src);
    const out = halves(dst, src.length);
    const fast = simdCount(src, dst, src.length);
    if (fast > 0) (brain ? simd!.bf16_encode : simd!.fp16_encode)(src.byteOffset, dst.byteOffset, fast);
    if (brain) for (let i = fast; i < out.length; i++) out[i] = bfloat16FromFloatBits(bits[i]);
    else for (let i = fast; i < out.length; i++) out[i] = halfFromFloatBits(bits[i]);
  };
  const decodeInto = (src: Uint8Array, dst: Float32Array, add: boolean) => {
    const codes = halves(src, dst.length);
    const fast = simdCount(src, dst, dst.length);
    if (fast > 0) (brain ? simd!.bf16_decode : simd!.fp16_decode)(src.byteOffset, dst.byteOffset, fast, add ? 1 : 0);
    if (brain) {
      const one = new Float32Array(1);
      const oneBits = new Uint32Array(one.buffer);
      for (let i = fast; i < dst.length; i++) {
        oneBits[0] = codes[i] << 16;
        dst[i] = add ? dst[i] + one[0] : one[0];
      }
    } else for (let i = fast; i < dst.length; i++) dst[i] = add ? dst[i] + table[codes[i]] : table[codes[i]];
  };
  const decode = (src: Uint8Array, dst: Float32Array) => decodeInto(src, dst, false);
  const accumulate = (src: Uint8Array, acc: Float32Array) => decodeInto(src, acc, true);
  return {
    spec,
    encodedBytes: (count) => wordAligned(count * 2),
    encode,
    decode,
    accumulate,
    elementError: brain
      ? (x) => 2 ** -8 * Math.abs(x) + 2 ** -134
      : (x) => (Math.abs(x) <= 65504 ? 2 ** -11 * Math.abs(x) + 2 ** -25 : Number.POSITIVE_INFINITY),
  };
}
