import type { Codec } from './codec.js';
import { finiteAbsMax, wordAligned } from './codec.js';
import type { CompressionSpec } from './compression-spec.js';

/**
 * Blockwise symmetric integer quantisation (int8: codes -127..127; int4: -7..7, two to a byte):
 * each block of B elements stores a float32 scale, its largest finite magnitude / the largest
 * code, and every element as round(x / scale). The code left over (-128, or the nibble 0 that
 * means -8) marks a non-finite element, which decodes as NaN: an Inf or NaN in a gradient
 * arrives as NaN, never as a finite number.
 */
export function blockIntCodec(spec: CompressionSpec): Codec {
  const wide = spec.format === 'int8';
  const levels = wide ? 127 : 7;
  const block = spec.blockSize;
  const blocks = (count: number) => Math.ceil(count / block);
  const codeBytes = (count: number) => (wide ? count : Math.ceil(count / 2));
  const scalesOf = (bytes: Uint8Array, count: number) =>
    new Float32Array(bytes.buffer, bytes.byteOffset, blocks(count));

  const encode = (src: Float32Array, dst: Uint8Array) => {
    const count = src.length;
    const scales = scalesOf(dst, count);
    const codeBase = scales.length * 4;
    for (let b = 0; b < scales.length; b++) {
      const start = b * block;
      const end = Math.min(count, start + block);
      const scale = Math.fround(finiteAbsMax(src, start, end) / levels);
      scales[b] = scale;
      const inverse = scale > 0 ? 1 / scale : 0;
      if (wide) {
        const codes = new Int8Array(dst.buffer, dst.byteOffset + codeBase, count);
        for (let i = start; i < end; i++) {
          const x = src[i];
          codes[i] = x - x !== 0 ? -128 : Math.max(-127, Math.min(127, Math.round(x * inverse)));
        }
      } else {
        for (let i = start; i < end; i += 2) {
          const lo = nibble(src[i], inverse);
          const hi = i + 1 < end ? nibble(src[i + 1], inverse) : 8;
          dst[codeBase + (i >> 1)] = lo | (hi << 4);
        }
      }
    }
  };

  const decodeInto = (src: Uint8Array, dst: Float32Array, add: boolean) => {
    const count = dst.length;
    const scales = scalesOf(src, count);
    const codeBase = scales.length * 4;
    const codes = new Int8Array(src.buffer, src.byteOffset + codeBase, codeBytes(count));
    for (let b = 0; b < scales.length; b++) {
      const start = b * block;
      const end = Math.min(count, start + block);
      const scale = scales[b];
      for (let i = start; i < end; i++) {
        let value: number;
        if (wide) {
          const q = codes[i];
          value = q === -128 ? Number.NaN : Math.fround(q * scale);
        } else {
          const q = (src[codeBase + (i >> 1)] >> ((i & 1) << 2)) & 15;
          value = q === 0 ? Number.NaN : Math.fround((q - 8) * scale);
        }
        dst[i] = add ? dst[i] + value : value;
      }
    }
  };

  return {
    spec,
    encodedBytes: (count) => wordAligned(blocks(count) * 4 + codeBytes(count)),
    encode,
    decode: (src, dst) => decodeInto(src, dst, false),
    accumulate: (src, acc) => decodeInto(src, acc, true),
    // Half a step of the block's scale; the slack covers the scale's and the product's float32 rounding.
    elementError: (x, blockMax) => (0.5 * blockMax * (1 + 2 ** -20)) / levels + 2 ** -23 * Math.abs(x) + 2 ** -126,
  };
}

/** An int4 code as its stored nibble: q + 8, with 0 for a non-finite element. */
function nibble(x: number, inverse: number): number {
  if (x - x !== 0) return 0;
  return Math.max(-7, Math.min(7, Math.round(x * inverse))) + 8;
}
