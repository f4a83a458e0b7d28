import { bfloat16FromFloatBits, halfDecodeTable, halfFromFloatBits } from '../dtypes/half.js';
import type { Codec } from './codec.js';
import { wordAligned } from './codec.js';
import type { CompressionSpec } from './compression-spec.js';

/**
 * fp16 and bf16 casts, 2 bytes an element, rounded to nearest even. bf16 keeps float32's range;
 * fp16 turns magnitudes beyond 65504 into infinities and those below 2^-24 into zero, as every
 * fp16 cast does (the blockwise formats scale instead).
 */
export function float16Codec(spec: CompressionSpec): Codec {
  const brain = spec.format === 'bf16';
  const halves = (bytes: Uint8Array, count: number) => new Uint16Array(bytes.buffer, bytes.byteOffset, count);
  const bitsOf = (f: Float32Array) => new Uint32Array(f.buffer, f.byteOffset, f.length);
  const table = halfDecodeTable();

  const encode = (src: Float32Array, dst: Uint8Array) => {
    const bits = bitsOf(src);
    const out = halves(dst, src.length);
    if (brain) for (let i = 0; i < out.length; i++) out[i] = bfloat16FromFloatBits(bits[i]);
    else for (let i = 0; i < out.length; i++) out[i] = halfFromFloatBits(bits[i]);
  };
  const decode = (src: Uint8Array, dst: Float32Array) => {
    const codes = halves(src, dst.length);
    if (brain) {
      const out = bitsOf(dst);
      for (let i = 0; i < out.length; i++) out[i] = codes[i] << 16;
    } else for (let i = 0; i < dst.length; i++) dst[i] = table[codes[i]];
  };
  const accumulate = (src: Uint8Array, acc: Float32Array) => {
    const codes = halves(src, acc.length);
    if (brain) {
      const one = new Float32Array(1);
      const oneBits = new Uint32Array(one.buffer);
      for (let i = 0; i < acc.length; i++) {
        oneBits[0] = codes[i] << 16;
        acc[i] += one[0];
      }
    } else for (let i = 0; i < acc.length; i++) acc[i] += table[codes[i]];
  };
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
