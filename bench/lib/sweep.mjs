// The size sweep the tuner's checks share (bench/regret.mjs, bench/predict-local.mjs): 8 B to
// 64 MiB by factors of 8, 20 timed calls per size. Small sizes warm up long.
import { runBench } from '../../dist/src/bench/run-bench.js';
import { SMALL_CALL_MAX_BYTES, SMALL_CALL_WARMUP } from '../../dist/src/bench/warm-up.js';

export const SWEEP = { minBytes: 8, maxBytes: 64 * 1024 * 1024, stepFactor: 8, stepBytes: 1 };

/** Every size of the sweep: 8 B x 8^k up to maxBytes, and maxBytes itself, which the steps skip (they stop at 16 MiB). */
export function sweepSizes(maxBytes = SWEEP.maxBytes) {
  const sizes = [];
  for (let bytes = SWEEP.minBytes; bytes <= maxBytes; bytes *= SWEEP.stepFactor) sizes.push(bytes);
  if (sizes.at(-1) < maxBytes) sizes.push(maxBytes);
  return sizes;
}

/**
 * The sweep as runBench ranges (a launch each): the steps, then the top size on its own, so the
 * tuner's checks cover 8 B to 64 MiB as the grid asks (before the forty-third session
 * they stopped at 16 MiB).
 */
export const SWEEP_RANGES = (() => {
  const sizes = sweepSizes();
  const steps = sizes.filter((bytes) => bytes < SWEEP.maxBytes);
  return steps.at(-1) * SWEEP.stepFactor === SWEEP.maxBytes ? [SWEEP] : [{ ...SWEEP, maxBytes: steps.at(-1) }, { ...SWEEP, minBytes: SWEEP.maxBytes }];
})();
/** Timed calls per size, back to back on every rank. */
export const SWEEP_ITERS = 20;

/**
 * The sweep's rows for one op and rank count, sizes up to maxBytes; `algorithm` forces one
 * (undefined: the tuner chooses). Small calls between fresh processes take thousands of calls to
 * settle while V8 compiles their path (src/bench/warm-up.ts), so sizes up to SMALL_CALL_MAX_BYTES
 * warm up SMALL_CALL_WARMUP calls, in a launch of their own, as `tsccl tune` warms its small
 * timings up, on either transport (thread ranks: below). Larger sizes, where that many calls
 * would take minutes between processes, warm up on a volume of bytes instead.
 * @param {{ op: string, ranks: number, procs: boolean, algorithm?: string, maxBytes?: number, timeoutMs?: number }} job
 */
export async function sweepRows({ op, ranks, procs, algorithm, maxBytes = SWEEP.maxBytes, timeoutMs = 600_000 }) {
  const run = (minBytes, top, warmupIters) => runBench({
    op, ranks, ...SWEEP, minBytes, maxBytes: top, iters: SWEEP_ITERS, warmupIters, check: false, dtype: 'float32', redop: 'sum', root: 0,
    timeoutMs, procs, ...(algorithm === undefined ? {} : { algorithm }),
  });
  // The sweep's sizes are minBytes x stepFactor^k: the first above SMALL_CALL_MAX_BYTES has the second launch.
  let split = SWEEP.minBytes;
  while (split <= SMALL_CALL_MAX_BYTES) split *= SWEEP.stepFactor;
  const rows = await run(SWEEP.minBytes, Math.min(maxBytes, split / SWEEP.stepFactor), SMALL_CALL_WARMUP);
  for (const bytes of sweepSizes(maxBytes).filter((b) => b >= split)) rows.push(...await run(bytes, bytes, largeWarmup(bytes, procs)));
  return rows;
}

/**
 * Larger sizes run in a launch each, warmed up on LARGE_WARMUP_BYTES of calls (at least 5): the
 * first size of a fresh launch after 5 warm-up calls took 3-4x its time in a warm one (2 thread
 * ranks, 2 MiB reduce-scatter: 507 us against 118-126 as the row after 256 KiB in one launch).
 */
const LARGE_WARMUP_BYTES = 256 * 1024 * 1024;
/**
 * Thread ranks warm up SMALL_CALL_WARMUP calls on every size below this (tune's LARGE, which it
 * times after 2 calls): the profile's figures are timed after that many calls, and thread ranks
 * run slower until they have made a few thousand. 200-call means from the start of a launch: 2
 * ranks, 1 MiB ring reduce-scatter, 100-460 us over the first ~2500 calls, 25-63 after (four
 * runs); 4 ranks, 64 KiB 1144 -> ~300 us over ~2000 calls, 4 MiB 2181 -> ~1300 over ~2500. Not
 * V8's optimising compiler alone (with --no-opt the 4-rank ring went 987 -> ~460), nor
 * WebAssembly tiering (--no-liftoff, --no-wasm-tier-up: the same), nor the young generation's
 * size (--min-semi-space-size=16: the same); a launch right after another starts slow again, and
 * a 1 s pause after 3000 calls undoes it (the machine, not V8); with TSCCL_KERNEL=js (400 us
 * calls) none shows. The 4-rank 1 MiB ring after 1000 warm-up calls took 484-851 us, after 4000
 * 392-444 (three alternating pairs); the sweep after 1000 measured the 4-rank 256 KiB and 2 MiB
 * reduce-scatter at 493 and 2005 us against 303 and 668 predicted from tune's ring of the same
 * minutes, and after 6000 and 1500 calls at 304 and 625-661. 256 MiB of 2 MiB calls also ended
 * at the 128th, just before V8's optimising compiler took the cores from 8 thread ranks for
 * calls 120-160 (20-call means of a 2 MiB ring reduce-scatter: 3-4 ms around them, 8-12 ms
 * there, in every run; none with --no-opt), and the sweep timed exactly those (9.1-11.9 ms; 3.2
 * after 600 warm-up calls).
 */
const THREAD_SETTLE_LARGE_BYTES = 16 * 1024 * 1024;
function largeWarmup(bytes, procs) {
  const settle = !procs && bytes < THREAD_SETTLE_LARGE_BYTES ? SMALL_CALL_WARMUP : 0;
  return Math.max(5, Math.ceil(LARGE_WARMUP_BYTES / bytes), settle);
}
