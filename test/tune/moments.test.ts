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
  let returned = false;
  let firstBeforeReturn = false;
  const sampling = sampleMoments(3, 30, async () => {
    if (at.length === 0) firstBeforeReturn = !returned;
    at.push(performance.now() - start);
    return at.length;
  });
  returned = true;
  const samples = await sampling;
  assert.deepEqual(samples, [1, 2, 3]);
  assert.ok(firstBeforeReturn, 'the first sample is taken at once, before the call returns');
  assert.ok(at[1] - at[0] >= 29 && at[2] - at[1] >= 29, `gaps ${at[1] - at[0]}, ${at[2] - at[1]} ms`);
});
