/**
 * A fixture's record of results that differ from what they should be: `expect` notes the first
 * differing element of each check (at most `limit` notes), and `failures` is what the rank
 * returns for its test to compare with [].
 */
export function mismatches(rank: number, limit = 20) {
  const failures: string[] = [];
  const expect = (label: string, got: ArrayLike<number>, want: ArrayLike<number>): void => {
    if (got.length !== want.length) {
      failures.push(`rank ${rank}: ${label}: ${got.length} elements, expected ${want.length}`);
      return;
    }
    for (let i = 0; i < want.length; i++) {
      if (got[i] !== want[i]) {
        if (failures.length < limit)
          failures.push(`rank ${rank}: ${label}: element ${i} is ${got[i]}, expected ${want[i]}`);
        return;
      }
    }
  };
  return { failures, expect };
}
