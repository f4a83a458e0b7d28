// One job of interleaved blocks (bench/lib/interleaved-rank.mjs) for one op and rank count over
// the sweep's sizes, as bench/regret.mjs and bench/predict-local.mjs --blocks run it: per size,
// the tuner's choice, the fewest calls in a block, and per candidate its blocks' means over ranks
// (null where the candidate does not run that size).
import { fileURLToPath } from 'node:url';
import { blockMeansOverRanks } from '../../dist/src/bench/time-in-blocks.js';
import { launch } from '../../dist/src/launch/launch.js';
import { SMALL_CALL_WARMUP } from '../../dist/src/tuner/calibrate.js';
import { SETTLE_MAX_BYTES, SWEEP, SWEEP_ITERS } from './sweep.mjs';

const rankScript = fileURLToPath(new URL('./interleaved-rank.mjs', import.meta.url));

/**
 * @param {{ op: string, ranks: number, procs: boolean, candidates: { algorithm?: string }[], blocks: number, threadWarmup: number }} job
 *   threadWarmup: warm-up calls of thread ranks on sizes up to SETTLE_MAX_BYTES (process ranks
 *   warm those up for SMALL_CALL_WARMUP calls, as tune does); larger sizes 5.
 */
export async function blockRows({ op, ranks, procs, candidates, blocks, threadWarmup }) {
  const options = { op, ranks, ...SWEEP, iters: SWEEP_ITERS, warmupIters: 0, check: false, dtype: 'float32', redop: 'sum', root: 0, timeoutMs: 900_000, procs };
  const warmup = { calls: 5, longCalls: procs ? SMALL_CALL_WARMUP : threadWarmup, longMaxBytes: SETTLE_MAX_BYTES };
  const { results } = await launch({
    nprocPerNode: ranks, mode: procs ? 'processes' : 'threads', script: rankScript, args: [JSON.stringify({ options, candidates, blocks, warmup })], output: 'prefix', timeoutMs: options.timeoutMs,
  });
  return results[0].map(({ bytes, chosen, callsPerBlock }, s) => ({
    bytes, chosen, callsPerBlock, blockTimes: candidates.map((_, c) => blockMeansOverRanks(results.map((rank) => rank[s].times), c)),
  }));
}
