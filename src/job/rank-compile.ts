import { availableParallelism } from 'node:os';
import { setFlagsFromString } from 'node:v8';
import { paramAutoFlag } from '../config/params.js';

/** V8's flag that moves optimising compiles off the thread that runs the code. */
const CONCURRENT_RECOMPILATION = /^--(no[-_]?)?concurrent[-_]recompilation$/;

/**
 * Whether the ranks a launcher starts on this machine compile V8's optimised code on their own
 * thread (TSCCL_RANK_SYNC_COMPILE). Where the ranks fill every core, a background compile can
 * only run by taking a core from a rank, and the peers of a rank that lost its core wait in
 * their calls for the scheduler's next turn, milliseconds; on its own thread the compile costs
 * the same time, but only that rank's (bench/RESULTS.md, "A fresh job's first calls: compiles
 * on the rank's own thread"). Flags of the ranks' own (`flags`: the launcher's execArgv and
 * NODE_OPTIONS) that choose either way stand.
 */
export function compilesOnRank(
  ranksOnMachine: number,
  flags: readonly string[],
  env: NodeJS.ProcessEnv = process.env,
): boolean {
  if (flags.some((flag) => CONCURRENT_RECOMPILATION.test(flag))) return false;
  return paramAutoFlag('TSCCL_RANK_SYNC_COMPILE', ranksOnMachine >= availableParallelism(), env);
}

/** The Node flags a launcher adds for process ranks, `ranksOnMachine` of them on this machine. */
export function processRankCompileFlags(
  ranksOnMachine: number,
  flags: readonly string[],
  env: NodeJS.ProcessEnv = process.env,
): string[] {
  return compilesOnRank(ranksOnMachine, flags, env) ? ['--no-concurrent-recompilation'] : [];
}

/**
 * Before a process starts `ranks` thread ranks: V8 reads the flag when it creates a thread's
 * isolate, so it is set for the process (every isolate created after, the ranks', takes it; the
 * threads that exist keep theirs). A later job of this process that does not want it gets V8's
 * default back, unless the process's own flags chose.
 */
export function compileThreadRanksOnThemselves(
  ranks: number,
  flags: readonly string[],
  env: NodeJS.ProcessEnv = process.env,
): void {
  const wanted = compilesOnRank(ranks, flags, env);
  if (wanted === setHere) return;
  setFlagsFromString(wanted ? '--no-concurrent-recompilation' : '--concurrent-recompilation');
  setHere = wanted;
}

/** Whether this module set --no-concurrent-recompilation for the isolates this process creates. */
let setHere = false;
