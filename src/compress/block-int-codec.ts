import type { CodecSimd } from '../kernels/codec-simd.js';
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
export function blockIntCodec(spec: CompressionSpec, simd?: CodecSimd): Codec {
  const wide = spec.format === 'int8';
  const levels = wide ? 127 : 7;
  const block = spec.blockSize;
  const blocks = (count: number) => Math.ceil(count / block);
  const codeBytes = (count: number) => (wide ? count : Math.ceil(count / 2));
  const scalesOf = (bytes: Uint8Array, count: number) =>
    new Float32Array(bytes.buffer, bytes.byteOffset, blocks(count));
  const codesOf = (bytes: Uint8Array, count: number) =>
    new Int8Array(bytes.buffer, bytes.byteOffset + blocks(count) * 4, codeBytes(count));

  // Whole blocks of a multiple of 16 elements go to the SIMD loops when both arrays are in their arena.
  const simdBlocks = (a: ArrayBufferView, b: ArrayBufferView, count: number) =>
    simd !== undefined && block % 16 === 0 && simd.contains(a) && simd.contains(b) ? Math.floor(count / block) : 0;

  const encode = (src: Float32Array, dst: Uint8Array) => {
    const count = src.length;
    const scales = scalesOf(dst, count);
    const codes = codesOf(dst, count);
    const fast = simdBlocks(src, dst, count);
    if (fast > 0)
      (wide ? simd!.int8_encode : simd!.int4_encode)(src.byteOffset, scales.byteOffset, codes.byteOffset, fast, block);
    for (let b = fast; b < scales.length; b++) {
      const start = b * block;
      const end = Math.min(count, start + block);
      const scale = Math.fround(finiteAbsMax(src, start, end) / levels);
      scales[b] = scale;
      const inverse = scale > 0 ? 1 / scale : 0;
      if (wide) quantise8(src, codes, start, end, inverse);
      else quantise4(src, codes, start, end, inverse);
    }
  };

  const decodeInto = (src: Uint8Array, dst: Float32Array, add: boolean) => {
    const count = dst.length;
    const scales = scalesOf(src, count);
    const codes = codesOf(src, count);
    const fast = simdBlocks(src, dst, count);
    if (fast > 0)
      (wide ? simd!.int8_decode : simd!.int4_decode)(
        scales.byteOffset,
        codes.byteOffset,
        dst.byteOffset,
        fast,
        block,
        add ? 1 : 0,
      );
    for (let b = fast; b < scales.length; b++) {
      const start = b * block;
      const end = Math.min(count, start + block);
      if (wide) dequantise8(codes, dst, start, end, scales[b], add);
      else dequantise4(codes, dst, start, end, scales[b], add);
    }
  };

  return {
    spec,
    encodedBytes: (count) => wordAligned(blocks(count) * 4 + codeBytes(count)),
    encode,
    decode: (src, dst) => decodeInto(src, dst, false),
    accumulate: (src, acc) => decodeInto(src, acc, true),
    // Half a step of the block's scale; the slack covers float32 rounding of the scale, of its
    // inverse and of x times it (the SIMD loops multiply in float32: 3 roundings of 2^-24 at up to 127 steps).
    elementError: (x, blockMax) => (0.5 * blockMax * (1 + 2 ** -14)) / levels + 2 ** -23 * Math.abs(x) + 2 ** -126,
  };
}

// The loops below are separate functions, each for one format and one direction, so that each
// stays monomorphic and the JIT compiles it to a tight loop.

function quantise8(src: Float32Array, codes: Int8Array, start: number, end: number, inverse: number): void {
  for (let i = start; i < end; i++) {
    const x = src[i];
    if (x - x !== 0) {
      codes[i] = -128;
      continue;
    }
    const q = Math.round(x * inverse);
    codes[i] = Math.max(-127, Math.min(127, q));
  }
}

function dequantise8(
  codes: Int8Array,
  dst: Float32Array,
  start: number,
  end: number,
  scale: number,
  add: boolean,
): void {
  if (add) {
    for (let i = start; i < end; i++) {
      const q = codes[i];
      dst[i] += q === -128 ? Number.NaN : Math.fround(q * scale);
    }
  } else {
    for (let i = start; i < end; i++) {
      const q = codes[i];
      dst[i] = q === -128 ? Number.NaN : q * scale;
    }
  }
}

/** An int4 code as its stored nibble: q + 8, with 0 for a non-finite element. */
function nibble(x: number, inverse: number): number {
  if (x - x !== 0) return 0;
  const q = Math.round(x * inverse);
  return Math.max(-7, Math.min(7, q)) + 8;
}

function quantise4(src: Float32Array, codes: Int8Array, start: number, end: number, inverse: number): void {
  for (let i = start; i < end; i += 2) {
    const lo = nibble(src[i], inverse);
    const hi = i + 1 < end ? nibble(src[i + 1], inverse) : 8;
    codes[i >> 1] = lo | (hi << 4);
  }
}

function dequantise4(
  codes: Int8Array,
  dst: Float32Array,
  start: number,
  end: number,
  scale: number,
  add: boolean,
): void {
  for (let i = start; i < end; i++) {
    const q = (codes[i >> 1] >> ((i & 1) << 2)) & 15;
    const value = q === 0 ? Number.NaN : Math.fround((q - 8) * scale);
    dst[i] = add ? dst[i] + value : value;
  }
}
