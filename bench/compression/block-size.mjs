#!/usr/bin/env node
// How the block size of the blockwise formats trades error for bytes and codec time: for each
// format and block size, one encode and decode of 4 Mi gradient-like values (magnitudes changing
// every 4096 values, 0.5% outliers 30x larger) in an arena, with the SIMD codecs where they exist.
// Prints the bytes per value, the error as noise over signal (RMS error over RMS value within each
// region of one magnitude, averaged over the regions), the largest error relative to the largest
// magnitude, and the codec's GB/s (encode + decode, best of 3).
// Usage: node bench/compression/block-size.mjs
import { codecFor } from '../../dist/src/compress/codec.js';
import { parseCompression } from '../../dist/src/compress/compression-spec.js';
import { arenaKernels } from '../../dist/src/kernels/simd-kernels.js';
import { Arena } from '../../dist/src/memory/arena.js';
import { seededRandom } from '../../dist/src/seeded-random.js';

const COUNT = 4 << 20;
const arena = Arena.create();
const simd = arenaKernels(arena).codecs;
const view = (ctor, n) =>
  arena.view(ctor, arena.allocate(Math.max(64, n * ctor.BYTES_PER_ELEMENT)), n, ctor.BYTES_PER_ELEMENT);
const values = view(Float32Array, COUNT);
const random = seededRandom(3);
for (let i = 0; i < COUNT; i++) {
  const r = random();
  values[i] = (random() + random() - 1) * 10 ** (((i >> 12) % 4) - 2) * (r > 0.995 ? 30 : 1);
}
let peak = 0;
for (const v of values) peak = Math.max(peak, Math.abs(v));
const decoded = view(Float32Array, COUNT);
console.log(`# block size of the blockwise formats, ${COUNT} values, ${new Date().toISOString().slice(0, 10)}`);
console.log('| format | block | bytes per value | RMS error / RMS value | max error / max | codec GB/s |');
console.log('|---|---:|---:|---:|---:|---:|');
for (const format of ['int8', 'int4', 'fp8e4m3']) {
  for (const blockSize of [32, 64, 128, 256, 512, 1024, 4096]) {
    const codec = codecFor(parseCompression({ format, blockSize }, {}), simd);
    const bytes = view(Uint8Array, codec.encodedBytes(COUNT));
    let best = Number.POSITIVE_INFINITY;
    for (let round = 0; round < 4; round++) {
      const started = performance.now();
      codec.encode(values, bytes);
      codec.decode(bytes, decoded);
      if (round > 0) best = Math.min(best, performance.now() - started);
    }
    let worst = 0;
    let noise = 0;
    const REGION = 4096;
    for (let start = 0; start < COUNT; start += REGION) {
      let errors = 0;
      let signal = 0;
      for (let i = start; i < start + REGION; i++) {
        const e = Math.abs(decoded[i] - values[i]);
        errors += e * e;
        signal += values[i] * values[i];
        worst = Math.max(worst, e);
      }
      noise += Math.sqrt(errors / signal) / (COUNT / REGION);
    }
    console.log(
      `| ${format} | ${blockSize} | ${(bytes.length / COUNT).toFixed(4)} | ${noise.toExponential(2)} | ${(worst / peak).toExponential(2)} | ${((2 * COUNT * 4) / (best * 1e6)).toFixed(1)} |`,
    );
  }
}
