import assert from 'node:assert/strict';
import { test } from 'node:test';
import { runFixture } from '../harness/ranks.js';

test('thread ranks rank every size class when their communicators are created: no call, of any element size, runs the cost model', async () => {
  const { results } = await runFixture('no-ranking-in-calls-rank', 4);
  const ranks = results as { rankedInCalls: number; algorithms: string[] }[];
  for (const [rank, result] of ranks.entries()) {
    assert.equal(result.rankedInCalls, 0, `rank ${rank} ranked size classes inside its calls`);
    assert.deepEqual(result.algorithms, ranks[0].algorithms, `rank ${rank} chose other algorithms than rank 0`);
  }
});
