/**
 * Warm-up calls of small calls, for `tsccl bench` (`--warmup_small`), `tsccl tune` and the
 * checks in bench/. V8 optimises the small-call path (the executor, the transport's send and
 * receive, Node's socket writes) one function at a time as each gets hot: with --trace-opt, a
 * 2-process 8 B all-reduce was still having them compiled after 2500 calls, and took 250-340 us
 * per call over its first 1500 calls, 60-120 over the next 1500, 20-60 after 3500 (thread ranks
 * alike: 81 us after 20 warm-up calls, 2-9 settled). Under `node --no-opt --no-maglev` the calls
 * never speed up (48-65 us throughout; bench/bounds/call-settle.mjs).
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
