/**
 * Warm-up calls of small calls, for `tsccl bench` (`--warmup_small`), `tsccl tune` and the checks
 * in bench/: V8 optimises the small-call path one function at a time as each gets hot, over
 * thousands of calls (docs/tuning.md, SMALL_CALL_WARMUP).
 */
export const SMALL_CALL_WARMUP = 4000;
/** Sizes up to this warm up SMALL_CALL_WARMUP calls; above, a call's time is its bytes moving. */
export const SMALL_CALL_MAX_BYTES = 256 * 1024;

/**
 * How many untimed calls a size gets: `warmupIters` (nccl-tests' -w), and at least `smallCalls`
 * for sizes up to SMALL_CALL_MAX_BYTES. A count, not a time, so every rank makes the same calls
 * without agreeing first (an extra collective between warm-up and timing costs the timed calls).
 */
export function warmupCallsFor(bytes: number, warmupIters: number, smallCalls: number): number {
  return bytes <= SMALL_CALL_MAX_BYTES ? Math.max(warmupIters, smallCalls) : warmupIters;
}
