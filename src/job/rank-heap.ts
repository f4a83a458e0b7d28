import type { ResourceLimits } from 'node:worker_threads';
import { paramInt } from '../config/params.js';

/**
 * The heap limits of a thread tsccl starts for a rank or its progress engine: a young generation
 * of TSCCL_RANK_YOUNG_GEN_MB. V8's own grows to 16-32 MiB and commits its pages afresh as it
 * cycles through them; every page a rank faults in stalls it, and its peers wait in their calls
 * (docs/tuning.md, TSCCL_RANK_YOUNG_GEN_MB).
 */
export function rankResourceLimits(): ResourceLimits | undefined {
  const mb = paramInt('TSCCL_RANK_YOUNG_GEN_MB');
  return mb > 0 ? { maxYoungGenerationSizeMb: mb } : undefined;
}

/** Flags that set V8's young generation, which a process rank's own flags keep over the launcher's. */
const YOUNG_GENERATION_FLAG = /^--(max-semi-space-size|max_semi_space_size|semi-space-growth-factor)(=|$)/;

/**
 * The Node flags a launcher adds for a process rank so that its main thread gets the young
 * generation of TSCCL_RANK_YOUNG_GEN_MB, as thread ranks do. V8 sizes a young generation at three
 * semi-spaces (two and the large objects' share), and takes the semi-space in whole MiB. With
 * V8's default a training rank's major collections fell in backward's tail, between its last
 * gradients and their all-reduce (docs/TRAINING.md, "Garbage in backward's tail"). None where
 * the rank's flags (`flags`: the launcher's execArgv and NODE_OPTIONS) set the young generation.
 */
export function processRankHeapFlags(flags: readonly string[]): string[] {
  const mb = paramInt('TSCCL_RANK_YOUNG_GEN_MB');
  if (mb === 0 || flags.some((flag) => YOUNG_GENERATION_FLAG.test(flag))) return [];
  return [`--max-semi-space-size=${Math.max(1, Math.floor(mb / 3))}`];
}
