import { invalidArgument } from '../errors.js';
import { allGatherDirect } from './all-gather-direct.js';
import { allGatherHierarchical } from './all-gather-hierarchical.js';
import { allGatherRing } from './all-gather-ring.js';
import { allReduceHierarchical } from './all-reduce-hierarchical.js';
import { allReduceDirect } from './all-reduce-direct.js';
import { allReduceRecursiveDoubling } from './all-reduce-recursive-doubling.js';
import { allReduceRing } from './all-reduce-ring.js';
import { allReduceTree } from './all-reduce-tree.js';
import { allToAllDirect } from './all-to-all-direct.js';
import { allToAllPairwise } from './all-to-all-pairwise.js';
import { barrierDissemination } from './barrier-dissemination.js';
import { broadcastBinomialTree } from './broadcast-binomial-tree.js';
import { broadcastDirect } from './broadcast-direct.js';
import { broadcastHierarchical } from './broadcast-hierarchical.js';
import { broadcastRing } from './broadcast-ring.js';
import { gatherLinear } from './gather-linear.js';
import { reduceBinomialTree } from './reduce-binomial-tree.js';
import { reduceRing } from './reduce-ring.js';
import { reduceScatterHierarchical } from './reduce-scatter-hierarchical.js';
import { reduceScatterRing } from './reduce-scatter-ring.js';
import type { CallShape, Collective, Schedule, ScheduleGenerator } from './schedule.js';
import { scatterLinear } from './scatter-linear.js';

/** Every algorithm tsccl has, by collective. The tuner chooses among these; nothing else may. */
export const ALGORITHMS: Readonly<Record<Collective, Readonly<Record<string, ScheduleGenerator>>>> = {
  allReduce: {
    ring: allReduceRing,
    recursive_doubling: allReduceRecursiveDoubling,
    direct: allReduceDirect,
    hierarchical: allReduceHierarchical,
    tree: allReduceTree,
  },
  allGather: { ring: allGatherRing, direct: allGatherDirect, hierarchical: allGatherHierarchical },
  reduceScatter: { ring: reduceScatterRing, hierarchical: reduceScatterHierarchical },
  broadcast: {
    binomial_tree: broadcastBinomialTree,
    direct: broadcastDirect,
    hierarchical: broadcastHierarchical,
    ring: broadcastRing,
  },
  reduce: { binomial_tree: reduceBinomialTree, ring: reduceRing },
  allToAll: { direct: allToAllDirect, pairwise: allToAllPairwise },
  gather: { linear: gatherLinear },
  scatter: { linear: scatterLinear },
  barrier: { dissemination: barrierDissemination },
};

export function algorithmNames(collective: Collective): string[] {
  return Object.keys(ALGORITHMS[collective]);
}

const CACHE_LIMIT = 4096;
const cache = new Map<string, Schedule>();

/**
 * The schedule of one rank for one call shape. Schedules are pure functions of their key, so
 * repeated calls of the same shape (the common case in training loops) reuse them.
 */
export function buildSchedule(shape: CallShape, rank: number, algorithm: string): Schedule {
  const key = `${algorithm}|${rank}|${JSON.stringify(shape)}`;
  let schedule = cache.get(key);
  if (schedule === undefined) {
    schedule = generateSchedule(shape, rank, algorithm);
    if (cache.size >= CACHE_LIMIT) cache.clear();
    cache.set(key, schedule);
  }
  return schedule;
}

/** The schedule without the cache: for the simulator, which builds thousands of ranks' schedules once. */
export function generateSchedule(shape: CallShape, rank: number, algorithm: string): Schedule {
  const generator = ALGORITHMS[shape.collective][algorithm];
  if (generator === undefined) {
    throw invalidArgument(
      `Unknown algorithm '${algorithm}' for ${shape.collective}: expected one of ${algorithmNames(shape.collective).join(', ')}`,
      { argument: 'algorithm', op: shape.collective },
    );
  }
  return generator(shape, rank);
}
