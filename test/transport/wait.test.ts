import { test } from 'node:test';
import assert from 'node:assert/strict';
import { availableParallelism } from 'node:os';
import { spinUntil, rankSpin } from '../../src/transport/wait.js';
import { withEnv } from '../harness/env.js';

test('thread ranks that outnumber the cores spin as long as the others, yielding their core; TSCCL_SPIN_YIELD=0 restores the 2 us spin', () => {
  const cores = availableParallelism();
  withEnv('TSCCL_SPIN_YIELD', undefined, () => {
    assert.deepEqual(
      rankSpin(cores),
      { spinMs: 2, spinYields: false },
      'every rank has a core: TSCCL_SPIN_US, no yield',
    );
    assert.deepEqual(rankSpin(cores + 1), { spinMs: 2, spinYields: true });
    assert.deepEqual(
      withEnv('TSCCL_SPIN_US', '300', () => rankSpin(cores + 1)),
      { spinMs: 0.3, spinYields: true },
    );
  });
  withEnv('TSCCL_SPIN_YIELD', '0', () => assert.deepEqual(rankSpin(cores + 1), { spinMs: 0.002, spinYields: false }));
  withEnv('TSCCL_SPIN_YIELD', 'yes', () =>
    assert.throws(() => rankSpin(cores + 1), {
      code: 'TSCCL_ERR_INVALID_ARGUMENT',
      message: /TSCCL_SPIN_YIELD=yes must be 0 or 1/,
    }),
  );
});

test('spinUntil returns as soon as the condition holds, yielding or not, and gives up after its budget', () => {
  for (const spinYields of [false, true]) {
    let tries = 0;
    assert.equal(
      spinUntil(() => ++tries >= 100, { spinMs: 10_000, spinYields }),
      true,
    );
    assert.equal(tries, 100, 'checked on every turn');
    assert.equal(
      spinUntil(() => false, { spinMs: 0, spinYields }),
      false,
      'no budget: one look',
    );
    const start = performance.now();
    assert.equal(
      spinUntil(() => false, { spinMs: 5, spinYields }),
      false,
    );
    assert.ok(performance.now() - start >= 5, 'spun its whole budget');
  }
});
