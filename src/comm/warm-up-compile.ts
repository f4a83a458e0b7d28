import { setFlagsFromString } from 'node:v8';
import { paramAutoFlag } from '../config/params.js';
import { inheritedNodeFlags } from '../job/node-flags.js';

/**
 * V8's --interrupt-budget by V8 version (major.minor), as that Node's `node --v8-options` lists
 * it: roughly the bytecode a function runs between two looks at whether to optimise it. Where
 * the running V8 is not listed, the warm-up leaves the flag alone.
 */
export const INTERRUPT_BUDGET_DEFAULTS: Readonly<Record<string, number>> = { '11.3': 67584 };

/** During init's warm-up the budget is V8's over this: its paths are optimised after fewer calls. */
export const WARM_UP_BUDGET_DIVISOR = 4;

const NAMES_INTERRUPT_BUDGET = /^--interrupt[-_]budget(=|$)/;

/** The interrupt budget during and after the warm-up; undefined where the flags name one (theirs stands) or V8's is not known. */
export function warmUpInterruptBudget(
  v8Version: string,
  flags: readonly string[],
): { during: number; after: number } | undefined {
  if (flags.some((flag) => NAMES_INTERRUPT_BUDGET.test(flag))) return undefined;
  const [major, minor] = v8Version.split('.');
  const after = INTERRUPT_BUDGET_DEFAULTS[`${major}.${minor}`];
  return after === undefined ? undefined : { during: Math.round(after / WARM_UP_BUDGET_DIVISOR), after };
}

/**
 * Runs `warm` with V8's interrupt budget lowered (TSCCL_WARMUP_EAGER_COMPILE; auto: for thread
 * ranks, `kind` 'shm'), V8's own restored after: the warm-up's calls get their paths optimised in
 * fewer of them, mid-size ones too, which the job's first calls otherwise compile (bench/RESULTS.md,
 * "Init's warm-up with a lower interrupt budget"). The flag is the process's: thread ranks of one
 * process set it alike.
 */
export async function compilingEagerly<T>(kind: 'shm' | 'tcp', warm: () => Promise<T>): Promise<T> {
  const budget = paramAutoFlag('TSCCL_WARMUP_EAGER_COMPILE', kind === 'shm')
    ? warmUpInterruptBudget(process.versions.v8, inheritedNodeFlags())
    : undefined;
  if (budget === undefined) return warm();
  setFlagsFromString(`--interrupt-budget=${budget.during}`);
  try {
    return await warm();
  } finally {
    setFlagsFromString(`--interrupt-budget=${budget.after}`);
  }
}
