// One rank of bench/compression/netns.mjs: all-reduce of float32 gradient-like data, uncompressed
// and in each compression format, at each size; returns the time per call (median of the timed
// calls) and the error against the uncompressed result. Args: JSON { sizesMiB, formats, iters,
// alloc } (alloc: the buffer from comm.alloc, which the codecs read and write in place).
import { init } from '../../dist/src/index.js';
import { seededRandom } from '../../dist/src/seeded-random.js';

const { sizesMiB, formats, iters, alloc } = JSON.parse(process.argv[2]);

/** Values over several magnitudes with zeros and outliers, different on every rank. */
function gradientLike(count, seed) {
  const random = seededRandom(seed);
  const out = new Float32Array(count);
  for (let i = 0; i < count; i++) {
    const r = random();
    out[i] = r < 0.05 ? 0 : (random() + random() - 1) * 10 ** (((i >> 12) % 4) - 2) * (r > 0.995 ? 30 : 1);
  }
  return out;
}

const median = (xs) => [...xs].sort((a, b) => a - b)[xs.length >> 1];

export default async function main() {
  const comm = await init();
  const rows = [];
  for (const mib of sizesMiB) {
    const count = (mib * 1024 * 1024) / 4;
    const data = gradientLike(count, 1 + comm.rank);
    const exact = data.slice();
    await comm.allReduce(exact);
    let peak = 0;
    for (let i = 0; i < count; i++) peak = Math.max(peak, Math.abs(exact[i]));
    const buffer = alloc ? comm.alloc('float32', count) : new Float32Array(count);
    for (const format of formats) {
      const options = format === 'none' ? {} : { compression: format };
      const times = [];
      for (let i = 0; i <= iters; i++) {
        buffer.set(data);
        await comm.barrier();
        const start = performance.now();
        await comm.allReduce(buffer, options);
        if (i > 0) times.push(performance.now() - start);
      }
      let worst = 0;
      for (let i = 0; i < count; i++) worst = Math.max(worst, Math.abs(buffer[i] - exact[i]));
      rows.push({ mib, format, ms: median(times), maxError: worst / peak });
    }
    if (alloc) comm.free(buffer);
  }
  await comm.destroy?.();
  return rows;
}
