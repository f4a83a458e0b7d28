import { Worker } from 'node:worker_threads';
import { ErrorCode, TscclError } from '../errors.js';
import { median } from './median.js';

/**
 * Pieces of the sizes a pulled message has while it still sits in its writer's 2 MiB L2. The
 * rate is not one figure: on the 2-core VMs a copy of up to 128 KiB ran at ~5 GB/s and one of
 * 192 KiB to 1 MiB at ~10 (memmove changes its method with the size), so the median is over sizes.
 */
const SIZES = [32, 64, 128, 256, 512, 1024].map((kib) => kib * 1024);
const SAMPLES_PER_SIZE = 100;
/** A round takes microseconds; a writer silent this long has died, and tune must not hang. */
const WRITER_TIMEOUT_MS = 10_000;
/** Flags after the data: the round the reader asks for, the round the writer finished, the size. */
const ASKED = 0;
const WRITTEN = 1;
const SIZE = 2;

/**
 * The writer: each round, fill the asked bytes (so they sit modified in this core's cache), then
 * say so. It runs in a worker so that it gets the other core.
 */
const WRITER = `
const { workerData } = require('node:worker_threads');
const data = new Uint8Array(workerData.memory, 0, workerData.bytes);
const flags = new Int32Array(workerData.memory, workerData.bytes, 4);
for (let round = 1; ; round++) {
  while (Atomics.load(flags, ${ASKED}) !== round) if (Atomics.load(flags, ${ASKED}) < 0) process.exit(0);
  data.fill(round & 255, 0, flags[${SIZE}]);
  Atomics.store(flags, ${WRITTEN}, round);
}`;

/**
 * How fast one core copies bytes another core has just written (GB/s, median over samples of
 * 32 KiB to 1 MiB): what a thread rank pays to pull a piece its peer reduced or received in the
 * same call, as each cache line comes from the writer's cache. The simulator's freshReadGBps.
 */
export async function measurePeerWrittenGBps(): Promise<number> {
  const bytes = SIZES[SIZES.length - 1];
  const memory = new SharedArrayBuffer(bytes + 16);
  const data = new Uint8Array(memory, 0, bytes);
  const flags = new Int32Array(memory, bytes, 4);
  // Into shared memory, as a thread rank copies into its arena.
  const target = new Uint8Array(new SharedArrayBuffer(bytes)).fill(1);
  const writer = new Worker(WRITER, { eval: true, workerData: { memory, bytes } });
  await new Promise<void>((resolve, reject) => { writer.once('online', resolve); writer.once('error', reject); });
  const rates: number[] = [];
  try {
    let round = 0;
    for (const size of SIZES) {
      for (let sample = 0; sample < SAMPLES_PER_SIZE; sample++) {
        flags[SIZE] = size;
        Atomics.store(flags, ASKED, ++round);
        const giveUpAt = performance.now() + WRITER_TIMEOUT_MS;
        while (Atomics.load(flags, WRITTEN) !== round) {
          if (performance.now() > giveUpAt) throw new TscclError(ErrorCode.TIMEOUT, `tune: the writer thread did not fill ${size} bytes within ${WRITER_TIMEOUT_MS} ms`);
        }
        const start = performance.now();
        target.set(data.subarray(0, size));
        rates.push(size / ((performance.now() - start) * 1e6));
      }
    }
  } finally {
    Atomics.store(flags, ASKED, -1);
    await writer.terminate();
  }
  return median(rates);
}
