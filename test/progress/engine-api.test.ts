import assert from 'node:assert/strict';
import { test } from 'node:test';
import { ErrorCode } from '../../src/errors.js';
import { runFixture } from '../harness/ranks.js';

for (const progress of ['engine', 'auto'])
  test(`a communicator on a progress engine (progress '${progress}') refuses bad input with its code, stages plain arrays, and reports like an inline one`, async () => {
    const { results } = await runFixture('engine-api-rank', 3, { progress });
    for (const [rank, r] of (results as Record<string, unknown>[]).entries()) {
      assert.equal(r.notAnArray, ErrorCode.INVALID_ARGUMENT, `rank ${rank}`);
      assert.equal(r.badOption, ErrorCode.INVALID_ARGUMENT, `rank ${rank}`);
      assert.equal(r.badRoot, ErrorCode.INVALID_ARGUMENT, `rank ${rank}`);
      assert.equal(r.preAborted, ErrorCode.ABORTED, `rank ${rank}`);
      assert.deepEqual(r.plain, [6, 6], `rank ${rank}`);
      assert.deepEqual(r.gathered, [0, 0, 0, 1, 1, 1, 2, 2, 2], `rank ${rank}`);
      assert.deepEqual(r.ops, ['allReduce:done', 'allGather:done'], `rank ${rank}`);
      const prediction = r.prediction as { algorithm?: unknown; timeUs?: unknown } | undefined;
      const answered = `rank ${rank}: predict answered ${JSON.stringify(prediction)}`;
      assert.equal(typeof prediction?.algorithm, 'string', answered);
      assert.ok(Number(prediction?.timeUs) > 0, answered);
      assert.equal(r.afterDestroy, ErrorCode.DESTROYED, `rank ${rank}`);
    }
  });
