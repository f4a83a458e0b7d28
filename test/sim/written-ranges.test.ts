import assert from 'node:assert/strict';
import { test } from 'node:test';
import { WrittenRanges } from '../../src/sim/written-ranges.js';

test('written ranges: a slice overlaps what was written only where it shares an element', () => {
  const ranges = new WrittenRanges();
  assert.equal(ranges.overlaps(0, 10), false);
  ranges.add(10, 5);
  assert.equal(ranges.overlaps(0, 10), false, 'ends where the written range begins');
  assert.equal(ranges.overlaps(15, 3), false, 'begins where it ends');
  assert.equal(ranges.overlaps(14, 1), true);
  assert.equal(ranges.overlaps(0, 100), true, 'covers it');
  assert.equal(ranges.overlaps(12, 0), false, 'an empty slice touches nothing');
});

test('written ranges agree with an element-by-element record over random writes', () => {
  let seed = 12345;
  const random = (n: number) => {
    seed = (seed * 1103515245 + 12345) % 2 ** 31;
    return seed % n;
  };
  for (let trial = 0; trial < 50; trial++) {
    const ranges = new WrittenRanges();
    const written = new Uint8Array(200);
    for (let write = 0; write < 20; write++) {
      const offset = random(190);
      const count = random(12);
      ranges.add(offset, count);
      written.fill(1, offset, offset + count);
      for (let probe = 0; probe < 20; probe++) {
        const at = random(195);
        const length = 1 + random(5);
        assert.equal(
          ranges.overlaps(at, length),
          written.subarray(at, at + length).includes(1),
          `trial ${trial}, [${at}, ${at + length})`,
        );
      }
    }
  }
});
