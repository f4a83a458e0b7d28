import assert from 'node:assert/strict';
import { test } from 'node:test';
import { CorePool, corePools } from '../../src/sim/core-pool.js';

test('work waits for the core that frees first, in the order it was asked for', () => {
  const pool = new CorePool(2);
  assert.equal(pool.finish(0, 10), 10);
  assert.equal(pool.finish(0, 10), 10);
  assert.equal(pool.finish(0, 10), 20, 'a third job on two busy cores waits for one');
  assert.equal(pool.finish(30, 5), 35, 'a core idle since 20 starts at once');
});

test('ranks of one host share a pool; no pool when ranks do not share cores', () => {
  const pools = corePools([7, 8, 9], [0, 0, 1], 2);
  assert.equal(pools.get(7), pools.get(8));
  assert.notEqual(pools.get(7), pools.get(9));
  assert.equal(corePools([7, 8], [0, 0], undefined).size, 0);
});
