import { codecFor } from '../compress/codec.js';
import type { CompressionSpec } from '../compress/compression-spec.js';
import { arenaKernels } from '../kernels/simd-kernels.js';
import { Arena } from '../memory/arena.js';

const ELEMENTS = 1 << 20;

/**
 * The codec's speed on this machine, GB/s of float32 input per pass, as a compressed all-reduce
 * mixes its passes (3 encodes or decodes for every 2 accumulations, roughly): encode, accumulate
 * and decode of 1 Mi gradient-like values in an arena, best of 3 after a warm-up. What `tsccl
 * sim --compression` prices thread and process ranks' codecs with.
 */
export function measureCodecGBps(spec: CompressionSpec): number {
  const arena = Arena.create();
  const codec = codecFor(spec, arenaKernels(arena).codecs);
  const view = <T extends Float32Array | Uint8Array>(
    ctor: { new (b: ArrayBufferLike, o: number, n: number): T; BYTES_PER_ELEMENT: number },
    n: number,
  ) =>
    arena.view(ctor as never, arena.allocate(Math.max(64, n * ctor.BYTES_PER_ELEMENT)), n, ctor.BYTES_PER_ELEMENT) as T;
  const values = view(Float32Array, ELEMENTS);
  for (let i = 0; i < ELEMENTS; i++) values[i] = Math.sin(i) * 10 ** (((i >> 12) % 4) - 2);
  const bytes = view(Uint8Array, codec.encodedBytes(ELEMENTS));
  const out = view(Float32Array, ELEMENTS);
  let best = Number.POSITIVE_INFINITY;
  for (let round = 0; round < 4; round++) {
    const started = performance.now();
    codec.encode(values, bytes);
    codec.accumulate(bytes, out);
    codec.decode(bytes, out);
    const ms = performance.now() - started;
    if (round > 0) best = Math.min(best, ms);
  }
  return (3 * ELEMENTS * 4) / (best * 1e6);
}
