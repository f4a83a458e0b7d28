import { type TreeNode, highestPowerOfTwoAtLeast } from './binomial-tree.js';

/**
 * The binary tree NCCL builds over the hosts of a call (src/graph/trees.cc), in positions 0..n-1:
 * position 0 is the root and has one child, the largest power of two below n; every other
 * position p sits at the level of its lowest set bit b, under p + b or p - b (whichever clears b
 * and sets the next bit; p - b when p + b is past the end), over p - b/2 and p + b/2 (or the
 * nearest p + b/4, p + b/8 ... inside the tree). Odd positions are the leaves, so a host is inner
 * in at most one of the two trees NCCL pairs (see secondTreePosition). Depth is at most
 * ceil(log2 n).
 */
export function inOrderTree(n: number, p: number): TreeNode {
  if (p === 0) return { parent: undefined, children: n > 1 ? [highestPowerOfTwoAtLeast(n) / 2] : [] };
  const low = p & -p;
  let parent = p & (2 * low) ? p - low : p + low;
  if (parent >= n) parent = p - low;
  const children: number[] = [];
  if (low > 1) {
    children.push(p - low / 2);
    let step = low / 2;
    while (step >= 1 && p + step >= n) step /= 2;
    if (step >= 1) children.push(p + step);
  }
  return { parent, children };
}

/** Hops from position p up to the root. */
export function inOrderDepth(n: number, p: number): number {
  let depth = 0;
  for (let at = p; at !== 0; at = inOrderTree(n, at).parent!) depth++;
  return depth;
}

/**
 * Where host h sits in the second tree of NCCL's double binary tree: the first tree mirrored
 * (n even), which turns its inner positions (even) into leaves (odd), or shifted by one (n odd).
 */
export function secondTreePosition(n: number, h: number): number {
  return n % 2 === 0 ? n - 1 - h : (h - 1 + n) % n;
}

/** The host at position p of the second tree (secondTreePosition's inverse). */
export function secondTreeHost(n: number, p: number): number {
  return n % 2 === 0 ? n - 1 - p : (p + 1) % n;
}

/**
 * The most tree neighbours (parent and children) one host has in NCCL's two trees together, over
 * hosts 0..n-1: 2 on two hosts, 3 on three, 4 from four on, where one tree alone gives an inner
 * host 3 and a leaf 1.
 */
export function busiestDoubleTreeDegree(n: number): number {
  const degree = (p: number) => {
    const node = inOrderTree(n, p);
    return (node.parent === undefined ? 0 : 1) + node.children.length;
  };
  let busiest = 0;
  for (let h = 0; h < n; h++) busiest = Math.max(busiest, degree(h) + degree(secondTreePosition(n, h)));
  return busiest;
}
