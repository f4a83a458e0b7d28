import assert from 'node:assert/strict';
import { test } from 'node:test';
import { launchFixture, runFixture } from '../harness/ranks.js';

// A call on other arrays of a recent call's shape reuses what that call chose (prepared-call.ts,
// RecipeCache); every result must still be the one its own arrays give.
for (const n of [1, 2, 3]) {
  test(`calls on new arrays every time on ${n} thread rank(s) follow each array, its length, dtype, op and placement, and shapes taking turns`, async () => {
    const { results } = await runFixture('fresh-arrays-rank', n);
    for (const [rank, failures] of (results as string[][]).entries()) assert.deepEqual(failures, [], `rank ${rank}`);
  });
}

test('calls on new arrays every time on 2 process ranks over TCP follow each array', async () => {
  const { results } = await launchFixture('fresh-arrays-rank', 2);
  for (const [rank, failures] of (results as string[][]).entries()) assert.deepEqual(failures, [], `rank ${rank}`);
});
