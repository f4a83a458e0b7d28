import type { BenchOpName } from '../algorithms/bench-ops.js';
import { blockMeansOverRanks } from '../bench/time-in-blocks.js';
import { ErrorCode, TscclError } from '../errors.js';
import { launch } from '../launch/launch.js';
import { median } from './median.js';

/** One small call tune times: a bench op of `bytes` on 2 ranks, by `algorithm` or the tuner's choice. */
export interface SmallCall {
  readonly op: BenchOpName;
  readonly bytes: number;
  readonly algorithm?: string;
}

/** What small-calls-rank.ts runs. */
export interface SmallCallsJob {
  readonly calls: readonly SmallCall[];
  readonly blocks: number;
  readonly minCalls: number;
  readonly warmupCalls: number;
  readonly timeoutMs: number;
}

/**
 * Times small calls of 2 ranks against each other in one job, in turns block by block
 * (bench/time-in-blocks.ts), as bench/regret.mjs times the algorithms it compares: us per call,
 * for each call the median over blocks of the block's mean over ranks. Calls of a few us timed
 * in separate launches compare as the launches' moments do, not as the calls do (docs/tuning.md).
 */
export async function timeSmallCalls(
  calls: readonly SmallCall[],
  options: { procs: boolean } & Omit<SmallCallsJob, 'calls'>,
): Promise<number[]> {
  const { procs, ...timing } = options;
  const job: SmallCallsJob = { calls, ...timing };
  const { results } = await launch({
    nprocPerNode: 2,
    mode: procs ? 'processes' : 'threads',
    script: new URL('./small-calls-rank.js', import.meta.url).href,
    args: [JSON.stringify(job)],
    output: 'prefix',
    timeoutMs: options.timeoutMs,
  });
  return calls.map((call, i) => {
    const blocks = blockMeansOverRanks(results as (number[] | null)[][], i);
    if (blocks === null)
      throw new TscclError(
        ErrorCode.INTERNAL,
        `tune: the ${call.op} of ${call.bytes} B by ${call.algorithm ?? 'the tuner'} was refused as invalid`,
        { op: call.op },
      );
    return median(blocks);
  });
}
