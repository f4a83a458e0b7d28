// The size sweep the tuner's checks share (bench/regret.mjs, bench/predict-local.mjs): 8 B to
// 64 MiB by factors of 8, 20 timed calls per size. Small sizes warm up long.
import { runBench } from '../../dist/src/bench/run-bench.js';
import { SMALL_CALL_WARMUP } from '../../dist/src/tuner/calibrate.js';

export const SWEEP = { minBytes: 8, maxBytes: 64 * 1024 * 1024, stepFactor: 8, stepBytes: 1 };
/** Timed calls per size, back to back on every rank. */
export const SWEEP_ITERS = 20;

/**
 * Small calls between fresh processes take thousands of calls to settle while V8 compiles their
 * path (SMALL_CALL_WARMUP in src/tuner/calibrate.ts), so process ranks warm up that long on sizes
 * up to this, in a launch of their own, as long as `tsccl tune` warms its small timings up; the
 * larger sizes, where that many calls would take minutes, warm up on a volume of bytes instead.
 */
export const SETTLE_MAX_BYTES = 256 * 1024;
/**
 * Thread ranks warm the same sizes up for fewer calls. While V8 still compiles their path on
 * its background threads, a compile preempts a rank that holds a core for a scheduler slice: 2
 * thread ranks, all_reduce 8 B to 256 KiB, three sweeps each, 20 timed calls per size: after 5,
 * 50 or 200 warm-up calls, 7 of 18 means at 32 and 256 KiB took 54-981 us (a call takes 6-20);
 * after 1000, one of 6 (1349 us).
 */
export const THREAD_SETTLE_WARMUP = 1000;

/**
 * The sweep's rows for one op and rank count, sizes up to maxBytes; `algorithm` forces one
 * (undefined: the tuner chooses).
 * @param {{ op: string, ranks: number, procs: boolean, algorithm?: string, maxBytes?: number, timeoutMs?: number }} job
 */
export async function sweepRows({ op, ranks, procs, algorithm, maxBytes = SWEEP.maxBytes, timeoutMs = 600_000 }) {
  const run = (minBytes, top, warmupIters) => runBench({
    op, ranks, ...SWEEP, minBytes, maxBytes: top, iters: SWEEP_ITERS, warmupIters, check: false, dtype: 'float32', redop: 'sum', root: 0,
    timeoutMs, procs, ...(algorithm === undefined ? {} : { algorithm }),
  });
  // The sweep's sizes are minBytes x stepFactor^k: the first above SETTLE_MAX_BYTES has the second launch.
  let split = SWEEP.minBytes;
  while (split <= SETTLE_MAX_BYTES) split *= SWEEP.stepFactor;
  const rows = await run(SWEEP.minBytes, Math.min(maxBytes, split / SWEEP.stepFactor), procs ? SMALL_CALL_WARMUP : THREAD_SETTLE_WARMUP);
  for (let bytes = split; bytes <= maxBytes; bytes *= SWEEP.stepFactor) rows.push(...await run(bytes, bytes, largeWarmup(bytes, procs)));
  return rows;
}

/**
 * Larger sizes run in a launch each, warmed up on LARGE_WARMUP_BYTES of calls (at least 5): the
 * first size of a fresh launch after 5 warm-up calls took 3-4x its time in a warm one (2 thread
 * ranks, 2 MiB reduce-scatter: 507 us against 118-126 as the row after 256 KiB in one launch).
 */
const LARGE_WARMUP_BYTES = 256 * 1024 * 1024;
/**
 * Thread ranks warm sizes up to this past V8's optimising compiler too: 256 MiB of 2 MiB calls
 * ended at the 128th, and the next 40 calls of 8 thread ranks on 2 cores were the ones that paid
 * for TurboFan compiling the executor's steps and waits in all 8 isolates (2 MiB ring
 * reduce-scatter, 20-call means: 3-4 ms before and after, 8-12 ms for calls 120-160, in every
 * run; none with --no-opt). The sweep timed exactly those: 9.1-11.9 ms after 128 warm-up calls,
 * 3.2 after 600. Larger sizes end their warm-up and timing before the compiler comes.
 */
const THREAD_SETTLE_LARGE_MAX_BYTES = 2 * 1024 * 1024;
function largeWarmup(bytes, procs) {
  const settle = !procs && bytes <= THREAD_SETTLE_LARGE_MAX_BYTES ? THREAD_SETTLE_WARMUP : 0;
  return Math.max(5, Math.ceil(LARGE_WARMUP_BYTES / bytes), settle);
}
