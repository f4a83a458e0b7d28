/** Optimal string alignment distance: insertions, deletions, substitutions and adjacent swaps. */
export function editDistance(a: string, b: string): number {
  const d = Array.from({ length: a.length + 1 }, (_, i) =>
    Array.from({ length: b.length + 1 }, (_, j) => (i === 0 ? j : j === 0 ? i : 0)),
  );
  for (let i = 1; i <= a.length; i++) {
    for (let j = 1; j <= b.length; j++) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1;
      d[i][j] = Math.min(d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + cost);
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1])
        d[i][j] = Math.min(d[i][j], d[i - 2][j - 2] + 1);
    }
  }
  return d[a.length][b.length];
}

/** The candidate with the fewest edits from `name`, ignoring case, however far. */
export function nearestName(name: string, candidates: readonly string[]): { name: string; distance: number } {
  let best = candidates[0];
  let bestDistance = Number.POSITIVE_INFINITY;
  for (const candidate of candidates) {
    const d = editDistance(name.toLowerCase(), candidate.toLowerCase());
    if (d < bestDistance) [best, bestDistance] = [candidate, d];
  }
  return { name: best, distance: bestDistance };
}

/** The valid name nearest `name`, if it is near enough to be a slip (a third of its letters, at least one). */
export function closestName(name: string, valid: readonly string[]): string | undefined {
  const nearest = nearestName(name, valid);
  return nearest.distance <= Math.max(1, Math.floor(Math.max(name.length, nearest.name?.length ?? 0) / 3))
    ? nearest.name
    : undefined;
}
