import assert from 'node:assert/strict';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import type { CallShape } from '../../src/algorithms/schedule.js';
import { ONE_SHOT_CAPACITY, selectForCall } from '../../src/tuner/predict.js';
import { runFixture } from '../harness/ranks.js';

const shape: CallShape = { collective: 'allReduce', nranks: 2, count: 2, root: 0, inPlace: false, chunkCount: 0 };
const request = {
  shape,
  bytes: 8,
  elementBytes: 4,
  hostCount: 1,
  transport: 'tcp',
  oneShotCapacity: ONE_SHOT_CAPACITY.tcp,
} as const;

test('selectForCall offers the one-shot path, whose slots carry no checksum, only to calls without checksums or the desync check', () => {
  assert.equal(selectForCall(request).algorithm, 'one_shot');
  assert.equal(selectForCall({ ...request, checksum: false }).algorithm, 'one_shot');
  assert.notEqual(selectForCall({ ...request, checksum: true }).algorithm, 'one_shot');
  assert.notEqual(selectForCall({ ...request, debugCheck: true }).algorithm, 'one_shot');
});

test('comm.predict names the algorithm the call then runs, with and without checksums, in place and out of place', async () => {
  // The default profile's choices: a profile `tsccl tune` saved on this machine must not change them.
  process.env.TSCCL_PROFILE = join(tmpdir(), `tsccl-no-profile-${process.pid}.json`);
  const { results } = await runFixture('predict-agrees-rank', 3).finally(() => {
    delete process.env.TSCCL_PROFILE;
  });
  for (const [rank, cases] of (results as Record<string, { predicted: string; ran: string }>[]).entries()) {
    for (const [name, { predicted, ran }] of Object.entries(cases))
      assert.equal(predicted, ran, `rank ${rank} ${name}`);
    // The small call is the one-shot path's, so the checksummed one shows the difference.
    assert.equal(cases.small.ran, 'one_shot');
    assert.notEqual(cases.smallChecksum.ran, 'one_shot');
  }
});
