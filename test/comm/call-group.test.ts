import assert from 'node:assert/strict';
import { test } from 'node:test';
import { ErrorCode } from '../../src/errors.js';
import { isOversubscribed } from '../../src/transport/wait.js';
import { groupFusionMaxBytes } from '../../src/tuner/group-fusion.js';
import { launchFixture, rankResults, runFixture } from '../harness/ranks.js';

type Report = { failures: string[]; code?: string };

const allCorrect = (results: unknown[]) => {
  for (const [rank, r] of (results as Report[]).entries()) assert.deepEqual(r.failures, [], `rank ${rank}`);
};

for (const ranks of [2, 3, 5])
  test(`random groups of collectives, sends and receives on ${ranks} thread ranks are all correct`, async () => {
    allCorrect((await runFixture('group-rank', ranks, { seed: 11 * ranks, groups: 12 })).results);
  });

test('random groups on 3 process ranks over TCP are all correct', async () => {
  allCorrect((await launchFixture('group-rank', 3, { seed: 7, groups: 10 })).results);
});

test('random groups on 3 thread ranks through their progress engines are all correct', async () => {
  allCorrect((await runFixture('group-rank', 3, { seed: 9, groups: 10, progress: 'engine' })).results);
});

for (const mismatch of ['extra-send', 'other-count'] as const)
  test(`groups that differ between ranks (${mismatch}) fail on every rank with MISMATCH under TSCCL_DEBUG_CHECK, not a hang`, async () => {
    const env = { ...process.env, TSCCL_DEBUG_CHECK: '1' };
    const results = await rankResults<Report>(runFixture('group-rank', 3, { seed: 1, groups: 0, mismatch }, { env }));
    for (const [rank, r] of results.entries()) assert.equal(r?.code, ErrorCode.MISMATCH, `rank ${rank}`);
  });

test('predictGroup prices a group as it would run: one fused bucket for 200 gradients, all-reduces past the fusion limit and other collectives alone, sends counted', async () => {
  const { results } = await runFixture('predict-group-rank', 2);
  const r = results[0] as {
    prediction: {
      timeUs: number;
      calls: { collective: string; bytes: number; tensors: number; timeUs: number }[];
      unpriced: number;
    };
    total: number;
    whole: number;
    broadcast: number;
    separately: number;
    limit: number;
    alone: number;
  };
  // 2 thread ranks of one process: the tuner's limit for shared memory on this machine's cores.
  assert.equal(r.limit, groupFusionMaxBytes({ transport: 'shm', hostCount: 1, oversubscribed: isOversubscribed(2) }));
  assert.deepEqual(
    r.prediction.calls.map((c) => [c.collective, c.bytes, c.tensors]),
    [
      ['allReduce', r.total, 200],
      ['allReduce', r.limit + 4, 1],
      ['allReduce', r.limit + 4, 1],
      ['broadcast', 800, 1],
    ],
  );
  assert.equal(r.prediction.calls[0].timeUs, r.whole);
  const sum = r.whole + 2 * r.alone + r.broadcast;
  assert.ok(Math.abs(r.prediction.timeUs - sum) < 1e-9 * sum, `${r.prediction.timeUs} us against ${sum}`);
  assert.equal(r.prediction.unpriced, 1);
  // The model too says a group is cheaper than its calls one by one.
  assert.ok(r.whole < r.separately, `${r.whole} us fused against ${r.separately} us one by one`);
});
