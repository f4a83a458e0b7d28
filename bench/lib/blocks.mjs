// One job of interleaved blocks (bench/lib/interleaved-rank.mjs) for one op and rank count over
// the sweep's sizes, as bench/regret.mjs and bench/predict-local.mjs --blocks run it: per size,
// the tuner's choice, the fewest calls in a block, and per candidate its blocks' means over ranks
// (null where the candidate does not run that size).
import { fileURLToPath } from 'node:url';
import { blockMeansOverRanks } from '../../dist/src/bench/time-in-blocks.js';
import { launch } from '../../dist/src/launch/launch.js';
import { SMALL_CALL_WARMUP } from '../../dist/src/bench/warm-up.js';
import { SWEEP_ITERS, SWEEP_RANGES } from './sweep.mjs';

const rankScript = fileURLToPath(new URL('./interleaved-rank.mjs', import.meta.url));

/**
 * A job's first size runs its first candidate this long before anything is timed: a launch's
 * first rows run slowest even after their warm-up calls (bench/RESULTS.md).
 */
const SETTLE_MS = 2000;

/**
 * Sizes up to 256 KiB warm up for SMALL_CALL_WARMUP calls per candidate, as tune does, larger
 * sizes 5 (warmupCallsFor in src/bench/warm-up.ts). `ranges` (a launch each) replace the
 * sweep's (bench/crossover.mjs, bench/regret.mjs --min-bytes).
 * @param {{ op: string, ranks: number, procs: boolean, candidates: { algorithm?: string }[], blocks: number,
 *   ranges?: { minBytes: number, maxBytes: number, stepFactor: number, stepBytes: number }[] }} job
 */
export async function blockRows({ op, ranks, procs, candidates, blocks, ranges = SWEEP_RANGES }) {
  const rows = [];
  for (const range of ranges) rows.push(...(await rangeRows({ op, ranks, procs, candidates, blocks, range })));
  return rows;
}

/** One launch of blockRows: the sizes of one range. */
async function rangeRows({ op, ranks, procs, candidates, blocks, range }) {
  const options = {
    op,
    ranks,
    ...range,
    iters: SWEEP_ITERS,
    warmupIters: 0,
    check: false,
    dtype: 'float32',
    redop: 'sum',
    root: 0,
    timeoutMs: 900_000,
    procs,
  };
  const warmup = { calls: 5, smallCalls: SMALL_CALL_WARMUP, settleMs: SETTLE_MS };
  const { results } = await launch({
    nprocPerNode: ranks,
    mode: procs ? 'processes' : 'threads',
    script: rankScript,
    args: [JSON.stringify({ options, candidates, blocks, warmup })],
    output: 'prefix',
    timeoutMs: options.timeoutMs,
  });
  return results[0].map(({ bytes, chosen, callsPerBlock }, s) => ({
    bytes,
    chosen,
    callsPerBlock,
    blockTimes: candidates.map((_, c) =>
      blockMeansOverRanks(
        results.map((rank) => rank[s].times),
        c,
      ),
    ),
  }));
}
