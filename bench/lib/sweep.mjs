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
 * tuner's checks cover 8 B to 64 MiB.
 */
export const SWEEP_RANGES = (() => {
  const sizes = sweepSizes();
  const steps = sizes.filter((bytes) => bytes < SWEEP.maxBytes);
  return steps.at(-1) * SWEEP.stepFactor === SWEEP.maxBytes
    ? [SWEEP]
    : [
        { ...SWEEP, maxBytes: steps.at(-1) },
        { ...SWEEP, minBytes: SWEEP.maxBytes },
      ];
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
  const run = (minBytes, top, warmupIters) =>
    runBench({
      op,
      ranks,
      ...SWEEP,
      minBytes,
      maxBytes: top,
      iters: SWEEP_ITERS,
      warmupIters,
      check: false,
      dtype: 'float32',
      redop: 'sum',
      root: 0,
      timeoutMs,
      procs,
      ...(algorithm === undefined ? {} : { algorithm }),
    });
  // The sweep's sizes are minBytes x stepFactor^k: the first above SMALL_CALL_MAX_BYTES has the second launch.
  let split = SWEEP.minBytes;
  while (split <= SMALL_CALL_MAX_BYTES) split *= SWEEP.stepFactor;
  const rows = await run(SWEEP.minBytes, Math.min(maxBytes, split / SWEEP.stepFactor), SMALL_CALL_WARMUP);
  for (const bytes of sweepSizes(maxBytes).filter((b) => b >= split))
    rows.push(...(await run(bytes, bytes, largeWarmup(bytes, procs))));
  return rows;
}

/**
 * Larger sizes run in a launch each, warmed up on LARGE_WARMUP_BYTES of calls (at least 5): the
 * first size of a fresh launch after 5 warm-up calls takes several times its time in a warm one.
 */
const LARGE_WARMUP_BYTES = 256 * 1024 * 1024;
/**
 * Thread ranks warm up SMALL_CALL_WARMUP calls on every size below this (tune's LARGE, which it
 * times after 2 calls): the profile's figures are timed after that many calls, and thread ranks
 * run slower until they have made a few thousand, and 8 of them lose their cores to V8's
 * optimising compiler around their 120th-160th call (figures in bench/RESULTS.md).
 */
const THREAD_SETTLE_LARGE_BYTES = 16 * 1024 * 1024;
function largeWarmup(bytes, procs) {
  const settle = !procs && bytes < THREAD_SETTLE_LARGE_BYTES ? SMALL_CALL_WARMUP : 0;
  return Math.max(5, Math.ceil(LARGE_WARMUP_BYTES / bytes), settle);
}
