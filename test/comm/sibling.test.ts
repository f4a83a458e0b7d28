import assert from 'node:assert/strict';
import { test } from 'node:test';
import { runFixture } from '../harness/ranks.js';

test("a communicator's siblings made one after another each meet on their own mailboxes: every sum is right", async () => {
  const { results } = await runFixture('siblings-rank', 3);
  for (const [rank, sums] of (results as number[][]).entries()) assert.deepEqual(sums, [6, 6, 6], `rank ${rank}`);
});
