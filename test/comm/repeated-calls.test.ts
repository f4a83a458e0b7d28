import assert from 'node:assert/strict';
import { test } from 'node:test';
import { runFixture } from '../harness/ranks.js';

// A communicator reuses the last call's plan and one-shot run while calls repeat their buffers;
// every argument such a call can change must still reach the result.
for (const n of [2, 3]) {
  test(`repeated calls on ${n} thread ranks follow every change of contents, op, dtype, placement, root, algorithm and size, and a message read by reference is never spoiled`, async () => {
    const { results } = await runFixture('repeat-rank', n);
    for (const [rank, failures] of (results as string[][]).entries()) assert.deepEqual(failures, [], `rank ${rank}`);
  });
}
