import { float8Encoder, float8Max, float8Tables } from '../dtypes/float8.js';
import type { Codec } from './codec.js';
import { finiteAbsMax, wordAligned } from './codec.js';
import type { CompressionSpec } from './compression-spec.js';

/**
 * fp8 (E4M3 or E5M2) with a power-of-two scale per block of B elements: the scale moves each
 * block's largest magnitude just under the format's largest finite value, so small gradients do
 * not flush to zero and scaling adds no rounding of its own. Infinities stay infinite in E5M2;
 * E4M3 has none and carries them as NaN.
 */
export function scaledFloat8Codec(spec: CompressionSpec): Codec {
  const format = spec.format === 'fp8e4m3' ? 'e4m3' : 'e5m2';
  const mantissaBits = format === 'e4m3' ? 3 : 2;
  const minExponent = format === 'e4m3' ? -6 : -14;
  const max = float8Max(format);
  const toCode = float8Encoder(format);
  const table = float8Tables(format).decode;
  const nanCode = 0x7f;
  const block = spec.blockSize;
  const blocks = (count: number) => Math.ceil(count / block);
  const scalesOf = (bytes: Uint8Array, count: number) =>
    new Float32Array(bytes.buffer, bytes.byteOffset, blocks(count));

  const encode = (src: Float32Array, dst: Uint8Array) => {
    const count = src.length;
    const scales = scalesOf(dst, count);
    const codeBase = scales.length * 4;
    for (let b = 0; b < scales.length; b++) {
      const start = b * block;
      const end = Math.min(count, start + block);
      const scale = blockScale(finiteAbsMax(src, start, end), max);
      scales[b] = scale;
      const inverse = 1 / scale;
      for (let i = start; i < end; i++) {
        const x = src[i];
        dst[codeBase + i] = format === 'e4m3' && x - x !== 0 ? nanCode : toCode(x * inverse);
      }
    }
  };

  const decodeInto = (src: Uint8Array, dst: Float32Array, add: boolean) => {
    const count = dst.length;
    const scales = scalesOf(src, count);
    const codeBase = scales.length * 4;
    for (let b = 0; b < scales.length; b++) {
      const start = b * block;
      const end = Math.min(count, start + block);
      const scale = scales[b];
      for (let i = start; i < end; i++) {
        const value = table[src[codeBase + i]] * scale;
        dst[i] = add ? dst[i] + value : value;
      }
    }
  };

  return {
    spec,
    encodedBytes: (count) => wordAligned(blocks(count) * 4 + count),
    encode,
    decode: (src, dst) => decodeInto(src, dst, false),
    accumulate: (src, acc) => decodeInto(src, acc, true),
    // Half an ulp relative, or half the smallest subnormal at the block's scale, whichever is larger.
    elementError: (x, blockMax) => {
      const scale = blockScale(blockMax, max);
      return 2 ** -(mantissaBits + 1) * Math.abs(x) + scale * 2 ** (minExponent - mantissaBits - 1) + 2 ** -149;
    },
  };
}

/** The power of two 2^k, with k as small as float32 allows, that brings `absMax` within `max`. */
function blockScale(absMax: number, max: number): number {
  if (absMax === 0) return 1;
  let k = Math.ceil(Math.log2(absMax / max));
  if (absMax / 2 ** k > max) k++;
  if (absMax / 2 ** (k - 1) <= max) k--;
  return 2 ** Math.max(k, -126);
}
