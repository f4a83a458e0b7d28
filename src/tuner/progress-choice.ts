import { COLLECTIVES, type Collective } from '../algorithms/schedule.js';

/**
 * The collectives a communicator with `progress: 'auto'` may run on the rank's own thread: those
 * whose size every rank sees alike (callSizeBytes), so that every rank takes the same path. A
 * gather's or scatter's buffers differ between root and peers; they stay on the engine, as
 * barriers do.
 */
export const INLINE_CHOOSABLE: readonly Collective[] = COLLECTIVES.filter(
  (collective) => collective !== 'gather' && collective !== 'scatter' && collective !== 'barrier',
);

/**
 * A call's size as every rank of it sees it: the gathered whole for an all-gather, else the
 * buffer (the same length on every rank for the collectives above). Undefined where ranks may
 * differ: an all-to-all-v's counts.
 */
export function callSizeBytes(
  collective: string,
  buffer: unknown,
  options: { readonly output?: unknown; readonly sendCounts?: unknown } | undefined,
): number | undefined {
  // Arguments are checked where the call runs: what is not a typed array has no size here.
  const bytes = (array: unknown) => (ArrayBuffer.isView(array) ? array.byteLength : undefined);
  if (collective === 'allGather') return options?.output === undefined ? bytes(buffer) : bytes(options.output);
  if (collective === 'allToAll' && options?.sendCounts !== undefined) return undefined;
  return bytes(buffer);
}

/** The largest size searched: a call past it always goes to the engine. */
const LARGEST_LOG2 = 40;

/**
 * Per collective, the smallest call (bytes as callSizeBytes gives them, a power of two) that goes
 * to the progress engine under `progress: 'auto'`; smaller calls run inline on the rank's thread.
 * The engine can hide at most a call's own time behind compute and adds `handOffUs` to it (the
 * call posted to the engine thread and its completion posted back), so a call whose predicted
 * inline time is below the hand-off can only lose there. `predictUs` is the tuner's inline
 * prediction, which sizes a call by the root's input (an all-gather's block of `nranks`); every
 * rank must pass the same `handOffUs` (the communicator agrees on it) so that all cut alike.
 */
export function engineMinBytes(
  predictUs: (collective: Collective, bytes: number) => number,
  handOffUs: number,
  nranks: number,
): Map<Collective, number> {
  const predicted = (collective: Collective, bytes: number) =>
    predictUs(collective, collective === 'allGather' ? Math.ceil(bytes / nranks) : bytes);
  const limits = new Map<Collective, number>();
  for (const collective of INLINE_CHOOSABLE) {
    let log2 = 0;
    while (log2 <= LARGEST_LOG2 && predicted(collective, 2 ** log2) < handOffUs) log2++;
    limits.set(collective, 2 ** log2);
  }
  return limits;
}

/** Where a call runs under `progress: 'auto'`, given engineMinBytes' limits. */
export function runsInline(limits: ReadonlyMap<Collective, number>, collective: string, bytes: number): boolean {
  const limit = limits.get(collective as Collective);
  return limit !== undefined && bytes < limit;
}
