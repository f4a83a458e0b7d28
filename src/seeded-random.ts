/**
 * A small deterministic generator (mulberry32): uniform numbers in [0, 1) that depend only on
 * the seed, so what is drawn from them (a ring search, a corpus, a batch) is the same on every
 * run and every rank.
 */
export function seededRandom(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}
