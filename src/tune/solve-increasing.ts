/** How far solveIncreasing searches and how close it gets. */
export interface SolveBounds {
  /** The first upper bracket tried; it doubles until f reaches the target or maxX is passed. */
  readonly firstStep: number;
  readonly maxX: number;
  /** The bracket's width at which the search ends, given its upper end. */
  readonly tolerance: (high: number) => number;
}

/**
 * The x >= 0 at which an increasing f reaches `target`, by doubling a bracket and then halving
 * it: used where the simulator reproduces a timed call with one figure of the profile, since no
 * closed form over the call's steps inverts the simulator. `atZero` when f(0) already reaches
 * the target (x is then 0); x stops near maxX when even that falls short.
 */
export function solveIncreasing(
  f: (x: number) => number,
  target: number,
  bounds: SolveBounds,
): { x: number; atZero: boolean } {
  if (f(0) >= target) return { x: 0, atZero: true };
  let [low, high] = [0, bounds.firstStep];
  while (f(high) < target && high < bounds.maxX) [low, high] = [high, high * 2];
  while (high - low > bounds.tolerance(high)) {
    const middle = (low + high) / 2;
    if (f(middle) < target) low = middle;
    else high = middle;
  }
  return { x: (low + high) / 2, atZero: false };
}
