import assert from 'node:assert/strict';
import { test } from 'node:test';
import { ErrorCode } from '../../src/errors.js';
import { runFixture } from '../harness/ranks.js';

for (const progress of [undefined, 'engine'] as const)
  test(`work handles${progress ? ' on a progress engine' : ''}: completion, success, a wait that times out, a failure's cause`, async () => {
    const { results } = await runFixture('work-rank', 2, { progress });
    for (const [rank, r] of (results as Record<string, unknown>[]).entries()) {
      assert.equal(r.completed, true, `rank ${rank}`);
      assert.equal(r.success, true, `rank ${rank}`);
      assert.equal(r.first, 3, `rank ${rank}`);
      assert.equal(r.failedCompleted, true, `rank ${rank}`);
      assert.equal(r.cause, ErrorCode.INVALID_ARGUMENT, `rank ${rank}`);
    }
    const [zero] = results as Record<string, unknown>[];
    assert.equal(zero.waitCode, ErrorCode.TIMEOUT);
    // Only the engine finishes a call while its rank's thread never yields.
    assert.equal(zero.completedWithoutYielding, progress === 'engine');
  });
