import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { launchFixture, runFixture } from '../harness/ranks.js';

type Outcome = { waited: string; first: number; last: number };

test('thread ranks: with a progress engine, a rank that blocks its thread still lets its peer finish the all-reduce', async () => {
  const { results } = await runFixture('blocked-rank-overlap-rank', 2, { progress: 'engine', waitMs: 60_000 });
  const [blocked, peer] = results as Outcome[];
  assert.equal(blocked.waited, 'ok', 'rank 1 did not finish while rank 0 was blocked');
  for (const r of [blocked, peer]) assert.deepEqual([r.first, r.last], [3, 3]);
});

test('thread ranks inline: the same blocked rank holds its peer back until it returns (what the engine removes)', async () => {
  const { results } = await runFixture('blocked-rank-overlap-rank', 2, { progress: 'inline', waitMs: 1000 });
  const [blocked, peer] = results as Outcome[];
  // Nothing can finish rank 1's call while rank 0's only thread is blocked: the wait runs out.
  assert.equal(blocked.waited, 'timed-out');
  for (const r of [blocked, peer]) assert.deepEqual([r.first, r.last], [3, 3]);
});

test('process ranks over TCP: with a progress engine, a rank that blocks its thread still serves its sockets', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'tsccl-overlap-'));
  try {
    const { results } = await launchFixture('blocked-rank-overlap-rank', 2, {
      progress: 'engine',
      flagDir: dir,
      waitMs: 60_000,
    });
    const [blocked, peer] = results as Outcome[];
    assert.equal(blocked.waited, 'ok', 'rank 1 did not finish while rank 0 was blocked');
    for (const r of [blocked, peer]) assert.deepEqual([r.first, r.last], [3, 3]);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

/** Every rank soaks the world, and its half too where the half has a peer (the rank alone in its half does not). */
const checkRandom = ({ results }: { results: unknown[] }, expected: number[]) => {
  for (const [rank, result] of (results as { calls: number; failures: string[] }[]).entries()) {
    assert.deepEqual(result.failures, [], `rank ${rank}`);
    assert.equal(result.calls, expected[rank], `rank ${rank}`);
  }
};

test('random calls on 3 thread ranks through their progress engines, on the world and a split half at once', async () => {
  checkRandom(
    await runFixture('random-calls-rank', 3, { calls: 40, seed: 5, maxLog2: 18, progress: 'engine' }),
    [80, 40, 80],
  );
});

test('random calls on 2 process ranks over TCP through their progress engines', async () => {
  checkRandom(
    await launchFixture('random-calls-rank', 2, { calls: 40, seed: 6, maxLog2: 18, progress: 'engine' }),
    [40, 40],
  );
});
