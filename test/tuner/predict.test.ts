import assert from 'node:assert/strict';
import { test } from 'node:test';
import { runFixture } from '../harness/ranks.js';

interface P { algorithm: string; timeUs: number; chunkCount: number; profile: string }

test('comm.predict names the algorithm the tuner would run and a time that grows with the size', async () => {
  const { results } = await runFixture('predict-rank', 3);
  for (const res of results as { small: P; large: P; forced: P; badCollective: string; badBytes: string; badAlgorithm: string }[]) {
    assert.equal(res.small.algorithm, 'recursive_doubling');
    assert.equal(res.large.algorithm, 'direct');
    assert.equal(res.forced.algorithm, 'ring');
    assert.ok(res.small.timeUs > 0 && res.large.timeUs > res.small.timeUs * 10, `${res.small.timeUs} ${res.large.timeUs}`);
    assert.deepEqual([res.badCollective, res.badBytes, res.badAlgorithm], ['TSCCL_ERR_INVALID_ARGUMENT', 'TSCCL_ERR_INVALID_ARGUMENT', 'TSCCL_ERR_INVALID_ARGUMENT']);
  }
});
