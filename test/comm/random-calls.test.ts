import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { RunResult } from '../../src/launch/run.js';
import { launchFixture, runFixture } from '../harness/ranks.js';

// Randomized calls, several in flight on two communicators at once (bench/stress/random-calls.mjs
// runs the same fixture longer and larger). A fixed seed: a failure repeats.
const check = ({ results }: RunResult, calls: number) => {
  for (const [rank, result] of (results as { calls: number; failures: string[] }[]).entries()) {
    assert.deepEqual(result.failures, [], `rank ${rank}`);
    assert.equal(result.calls, 2 * calls, `rank ${rank}`);
  }
};

test('random calls on 4 thread ranks, in flight on the world and on its halves at once', async () => {
  check(await runFixture('random-calls-rank', 4, { calls: 80, seed: 1, maxLog2: 18 }), 80);
});

test('random calls on 4 process ranks over TCP, 2 sockets per peer and 64 KiB pieces', async () => {
  check(
    await launchFixture(
      'random-calls-rank',
      4,
      { calls: 80, seed: 2, maxLog2: 20 },
      { env: { ...process.env, TSCCL_NSOCKS_PERPEER: '2', TSCCL_CHUNK_BYTES: '65536' } },
    ),
    80,
  );
});

test('random calls on 2 processes x 2 thread ranks, hierarchical algorithms across the processes among them', async () => {
  check(await launchFixture('random-calls-rank', 2, { calls: 60, seed: 3, maxLog2: 18 }, { threadsPerProc: 2 }), 60);
});
