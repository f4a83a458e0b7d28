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
