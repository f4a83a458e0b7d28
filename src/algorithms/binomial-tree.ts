import { mod } from './schedule.js';

/**
 * The binomial tree rooted at `root` over n ranks, in ranks relative to the root: a node's parent
 * clears its lowest set bit; its children add each smaller power of two. Children are listed
 * largest subtree first, the order a broadcast should serve them in.
 */
export interface TreeNode {
  readonly parent: number | undefined;
  readonly children: readonly number[];
}

export function binomialTree(n: number, root: number, rank: number): TreeNode {
  const rel = mod(rank - root, n);
  const lowBit = rel === 0 ? highestPowerOfTwoAtLeast(n) : rel & -rel;
  const children: number[] = [];
  for (let mask = lowBit >> 1; mask >= 1; mask >>= 1) {
    if (rel + mask < n) children.push(mod(rel + mask + root, n));
  }
  return { parent: rel === 0 ? undefined : mod(rel - lowBit + root, n), children };
}

export function highestPowerOfTwoAtLeast(n: number): number {
  let p = 1;
  while (p < n) p *= 2;
  return p;
}
