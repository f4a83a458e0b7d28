import assert from 'node:assert/strict';
import { test } from 'node:test';
import { rateOfMeanTime, sampleMoments } from '../../src/tune/moments.js';

test('a slow moment weighs by the time it costs, not as one rate among others', () => {
  // 1 GB at 10 GB/s and 1 GB at 2 GB/s take 0.1 + 0.5 s: 2 GB in 0.6 s, not the 6 GB/s mean.
  assert.equal(rateOfMeanTime([10, 2]), 2 / 0.6);
  assert.equal(rateOfMeanTime([7, 7, 7]), 7);
});

test('moments are taken in turn, the gap between them and not before the first', async () => {
  const at: number[] = [];
  const start = performance.now();
  const samples = await sampleMoments(3, 30, async () => { at.push(performance.now() - start); return at.length; });
  assert.deepEqual(samples, [1, 2, 3]);
  assert.ok(at[0] < 25, `first sample at once, took ${at[0]} ms`);
  assert.ok(at[1] - at[0] >= 29 && at[2] - at[1] >= 29, `gaps ${at[1] - at[0]}, ${at[2] - at[1]} ms`);
});
