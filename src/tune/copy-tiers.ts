import { Worker } from 'node:worker_threads';
import { ErrorCode, TscclError } from '../errors.js';
import type { ReduceKernel } from '../kernels/reduce-kernel.js';
import { arenaKernels } from '../kernels/simd-kernels.js';
import { Arena } from '../memory/arena.js';
import { MIB } from '../topology/local-profile.js';
import { rateOfMeanTime, sampleMoments } from './moments.js';

/** Working sets (source plus destination, summed over the cores that copy): from within a core's L2 to well past the L3. */
export const TIER_MIB = [1, 2, 8, 16, 32, 48, 64, 128, 256];
/**
 * The 2-core VMs change speed within seconds as their vCPUs move, and a run of calls meets every
 * state, so each tier is sampled at moments a second apart and keeps their mean time per byte, as
 * tune's peer-cache figures do; tune takes them in bursts through its minute, as what both cores
 * copy at once changes for longer (docs/tuning.md).
 */
const MOMENTS_PER_BURST = 2;
const MOMENT_GAP_MS = 1000;
/** Bytes each sample copies at least, so a sample of a small working set is not a few microseconds. */
const SAMPLE_BYTES = 256 * MIB;
/** A sample takes well under a second; a helper silent this long has died, and tune must not hang. */
const HELPER_TIMEOUT_MS = 10_000;

/**
 * One tier: one core copying alone, each core's rate while every core copies its share at once,
 * and one core alone folding two float32 arrays into a third (the sum kernel, bytes written).
 */
export interface CopyTier {
  readonly bytes: number;
  readonly copyGBps: number;
  readonly allCoresGBps: number;
  readonly foldGBps: number;
}

/** Control words shared with the helpers. */
const ROUND = 0; // the sample asked for; -1 ends the helpers
const HALF = 1; // bytes each thread copies per copy
const COPIES = 2;
const READY = 3; // threads at the start line of this round
const DONE = 4; // helpers finished with this round
const CONTROL_WORDS = 5;

/**
 * A helper: waits for a round, meets the others at the start line (so all cores copy at once),
 * copies its own share `copies` times and writes its rate into its slot.
 */
const HELPER = `
const { workerData } = require('node:worker_threads');
const control = new Int32Array(workerData.control);
const rates = new Float64Array(workerData.rates);
const memory = new Uint8Array(workerData.memory).fill(1);
const threads = workerData.threads;
for (let seen = 0; ; ) {
  Atomics.wait(control, ${ROUND}, seen);
  const round = Atomics.load(control, ${ROUND});
  if (round < 0) break;
  seen = round;
  const half = control[${HALF}], copies = control[${COPIES}];
  const source = memory.subarray(0, half), target = memory.subarray(half, 2 * half);
  Atomics.add(control, ${READY}, 1);
  while (Atomics.load(control, ${READY}) < threads) {}
  const start = performance.now();
  for (let i = 0; i < copies; i++) target.set(source);
  rates[workerData.slot] = (half * copies) / ((performance.now() - start) * 1e6);
  Atomics.add(control, ${DONE}, 1);
}`;

/** Float32 arrays of an arena (where the kernels run) and its sum kernel: what foldRate times. */
interface Folding {
  readonly sum: ReduceKernel;
  readonly arrays: readonly Float32Array[];
}

/** Three arrays of a third of `largest` each, the inputs written (no page is the shared zero page, which reads from the cache). */
function folding(largest: number): Folding {
  const arena = Arena.create();
  const length = Math.ceil(largest / 3 / 16) * 4;
  const arrays = [0, 1, 2].map(() => arena.view(Float32Array, arena.allocate(length * 4), length, 4));
  arrays.forEach((array, i) => {
    array.fill(i);
  });
  return { sum: arenaKernels(arena).reduce('float32', 'sum'), arrays };
}

/** One core folding d = a + b, the three spanning `bytes`, `folds` times: bytes written per ns. */
function foldRate({ sum, arrays }: Folding, bytes: number, folds: number): number {
  const length = Math.floor(bytes / 3 / 16) * 4;
  const [d, a, b] = arrays.map((array) => array.subarray(0, length));
  const start = performance.now();
  for (let i = 0; i < folds; i++) sum(d, a, b);
  return (length * 4 * folds) / ((performance.now() - start) * 1e6);
}

function copyRate(memory: Uint8Array, half: number, copies: number): number {
  const [source, target] = [memory.subarray(0, half), memory.subarray(half, 2 * half)];
  const start = performance.now();
  for (let i = 0; i < copies; i++) target.set(source);
  return (half * copies) / ((performance.now() - start) * 1e6);
}

/**
 * How fast a core copies by working set (TypedArray.set within a SharedArrayBuffer written first,
 * so no page is the shared zero page; each sample copies at least `sampleBytes`, and the rate
 * is the mean time per byte over every moment of every burst): one core
 * alone, and each core while all `cores` copy their share of the same working set at once
 * (helpers on worker threads). The two differ past the caches, where the cores share the memory
 * bus. Thread ranks of a call mostly copy all at once; a broadcast's single reader copies alone.
 * And one core folding (the float32 sum kernel on the arena, each sample writing as many bytes as a
 * copy's): it runs as fast as a copy while the three buffers fit the caches, where the core is
 * the bound, and slower past them, where it moves 3 bytes of memory for a copy's 2.
 */
export class CopyTierSampler {
  private readonly moments: TierMoment[][] = [];
  private readonly cores: number;
  private readonly tierMib: readonly number[];
  private readonly sampleBytes: number;
  /**
   * The buffers every burst copies in (2.5 x the largest tier on 2 cores), allocated and written
   * at the first and kept while the sampler lives: allocating and first touching them in every
   * burst would cost more than its moments.
   */
  private memory: CopyMemory | undefined;

  constructor(cores: number, options: { tierMib?: readonly number[]; sampleBytes?: number } = {}) {
    this.cores = cores;
    this.tierMib = options.tierMib ?? TIER_MIB;
    this.sampleBytes = options.sampleBytes ?? SAMPLE_BYTES;
  }

  /** Samples every tier at `moments` moments `gapMs` apart. */
  async burst(moments = MOMENTS_PER_BURST, gapMs = MOMENT_GAP_MS): Promise<void> {
    this.memory ??= copyMemory(this.cores, Math.max(...this.tierMib) * MIB);
    this.moments.push(...(await sampleCopyTiers(this.memory, this.tierMib, this.sampleBytes, moments, gapMs)));
  }

  /** Each tier's rates over all the moments sampled so far. */
  tiers(): CopyTier[] {
    if (this.moments.length === 0)
      throw new TscclError(ErrorCode.INTERNAL, 'tune: no moment of the copy tiers was measured');
    return this.tierMib.map((mib, i) => ({
      bytes: mib * MIB,
      copyGBps: rateOfMeanTime(this.moments.map((tiers) => tiers[i].alone)),
      allCoresGBps: rateOfMeanTime(this.moments.map((tiers) => tiers[i].shared)),
      foldGBps: rateOfMeanTime(this.moments.map((tiers) => tiers[i].fold)),
    }));
  }
}

/** One tier's rates at one moment, GB/s. */
interface TierMoment {
  readonly alone: number;
  readonly shared: number;
  readonly fold: number;
}

/** What the samples copy and fold in: this thread's buffer, each helper's, and the fold's arrays. */
interface CopyMemory {
  readonly own: Uint8Array;
  readonly helpers: readonly SharedArrayBuffer[];
  readonly folds: Folding;
}

/** Buffers for `cores` threads copying working sets of up to `largest` bytes (each helper writes its own). */
function copyMemory(cores: number, largest: number): CopyMemory {
  const helpers = Array.from(
    { length: Math.max(0, Math.floor(cores) - 1) },
    () => new SharedArrayBuffer(Math.ceil(largest / cores)),
  );
  return { own: new Uint8Array(new SharedArrayBuffer(largest)).fill(1), helpers, folds: folding(largest) };
}

/** Every tier's rates at `moments` moments `gapMs` apart, with a helper thread on each other core. */
async function sampleCopyTiers(
  memory: CopyMemory,
  tierMib: readonly number[],
  sampleBytes: number,
  moments: number,
  gapMs: number,
): Promise<TierMoment[][]> {
  const { own, folds } = memory;
  const helpers = memory.helpers.length;
  const control = new Int32Array(new SharedArrayBuffer(4 * CONTROL_WORDS));
  const rates = new Float64Array(new SharedArrayBuffer(8 * Math.max(1, helpers)));
  const workers = memory.helpers.map(
    (helperMemory, slot) =>
      new Worker(HELPER, {
        eval: true,
        workerData: { control: control.buffer, rates: rates.buffer, memory: helperMemory, threads: helpers + 1, slot },
      }),
  );
  try {
    await Promise.all(
      workers.map(
        (w) =>
          new Promise<void>((resolve, reject) => {
            w.once('online', resolve);
            w.once('error', reject);
          }),
      ),
    );
    let round = 0;
    /** Each core's rate, all copying `half` bytes `copies` times at once. */
    const together = (half: number, copies: number): number => {
      control[HALF] = half;
      control[COPIES] = copies;
      control[READY] = 0;
      control[DONE] = 0;
      Atomics.store(control, ROUND, ++round);
      Atomics.notify(control, ROUND);
      Atomics.add(control, READY, 1);
      const giveUpAt = performance.now() + HELPER_TIMEOUT_MS;
      while (Atomics.load(control, READY) < helpers + 1) {
        if (performance.now() > giveUpAt)
          throw new TscclError(
            ErrorCode.TIMEOUT,
            `tune: ${helpers} copy helper thread(s) did not start within ${HELPER_TIMEOUT_MS} ms`,
          );
      }
      const mine = copyRate(own, half, copies);
      while (Atomics.load(control, DONE) < helpers) {
        if (performance.now() > giveUpAt)
          throw new TscclError(
            ErrorCode.TIMEOUT,
            `tune: ${helpers} copy helper thread(s) did not finish ${copies} copies of ${half} bytes within ${HELPER_TIMEOUT_MS} ms`,
          );
      }
      let sum = mine;
      for (let h = 0; h < helpers; h++) sum += rates[h];
      return sum / (helpers + 1);
    };
    // Per moment, each tier's rate alone and all cores at once.
    return await sampleMoments(moments, gapMs, () =>
      tierMib.map((mib) => {
        const half = (mib * MIB) / 2;
        const share = Math.floor(half / (helpers + 1));
        return {
          alone: copyRate(own, half, Math.max(2, Math.ceil(sampleBytes / half))),
          shared: together(share, Math.max(2, Math.ceil(sampleBytes / (helpers + 1) / share))),
          fold: foldRate(folds, mib * MIB, Math.max(2, Math.ceil((3 * sampleBytes) / (mib * MIB)))),
        };
      }),
    );
  } finally {
    Atomics.store(control, ROUND, -1);
    Atomics.notify(control, ROUND);
    await Promise.all(workers.map((w) => w.terminate()));
  }
}
