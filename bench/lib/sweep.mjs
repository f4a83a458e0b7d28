// The size sweep the tuner's checks share (bench/regret.mjs, bench/predict-local.mjs): 8 B to
// 64 MiB by factors of 8, 20 timed calls per size. Process ranks warm small sizes up long.
import { runBench } from '../../dist/src/bench/run-bench.js';
import { SMALL_CALL_WARMUP } from '../../dist/src/tuner/calibrate.js';

export const SWEEP = { minBytes: 8, maxBytes: 64 * 1024 * 1024, stepFactor: 8, stepBytes: 1 };
/** Timed calls per size, back to back on every rank. */
export const SWEEP_ITERS = 20;

/**
 * Small calls between fresh processes take thousands of calls to settle while V8 compiles their
 * path (SMALL_CALL_WARMUP in src/tuner/calibrate.ts), so process ranks warm up that long on sizes
 * up to this, in a launch of their own, and briefly on the larger ones, where that many calls
 * would take minutes; as long as `tsccl tune` warms its small timings up.
 */
export const SETTLE_MAX_BYTES = 256 * 1024;

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
  if (!procs) return run(SWEEP.minBytes, maxBytes, 5);
  // The sweep's sizes are minBytes x stepFactor^k: the first above SETTLE_MAX_BYTES starts the second launch.
  let split = SWEEP.minBytes;
  while (split <= SETTLE_MAX_BYTES) split *= SWEEP.stepFactor;
  return [...await run(SWEEP.minBytes, Math.min(maxBytes, split / SWEEP.stepFactor), SMALL_CALL_WARMUP),
    ...(maxBytes >= split ? await run(split, maxBytes, 5) : [])];
}
