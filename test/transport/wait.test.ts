import { test } from 'node:test';
import assert from 'node:assert/strict';
import { availableParallelism } from 'node:os';
import { Worker } from 'node:worker_threads';
import { blockUntil, rankSpin, spinUntil, waitWhileEqual, wake } from '../../src/transport/wait.js';
import { withEnv } from '../harness/env.js';
import { waitFor } from '../harness/wait-for.js';

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

/** Word 0 is waited on, word 1 counts its sleepers (as on one cache line of a mailbox). */
const WORD = 0;
const SLEEPERS = 1;

test('a thread asleep in blockUntil counts itself among the sleepers, and wake() wakes it', async () => {
  const words = new Int32Array(new SharedArrayBuffer(64));
  const waitUrl = new URL('../../src/transport/wait.js', import.meta.url).href;
  // The worker blocks for up to 60 s: only wake() can end it in time for the test.
  const worker = new Worker(
    `const { workerData, parentPort } = require('node:worker_threads');
     import(workerData.waitUrl).then(({ blockUntil }) => {
       const words = workerData.words;
       const came = blockUntil(words, ${WORD}, ${SLEEPERS}, () => Atomics.load(words, ${WORD}) !== 0, 60000);
       parentPort.postMessage(came);
     });`,
    { eval: true, workerData: { words, waitUrl } },
  );
  const answer = new Promise((resolve, reject) => {
    worker.once('message', resolve);
    worker.once('error', reject);
  });
  await waitFor(() => Atomics.load(words, SLEEPERS) === 1, { what: 'the worker to sleep' });
  Atomics.store(words, WORD, 1);
  wake(words, WORD, SLEEPERS);
  assert.equal(await answer, true);
  assert.equal(Atomics.load(words, SLEEPERS), 0, 'it left the count when it woke');
  await worker.terminate();
  assert.equal(
    blockUntil(words, WORD, SLEEPERS, () => false, 1),
    false,
    'a wait that runs out says so',
  );
  assert.equal(Atomics.load(words, SLEEPERS), 0, 'and leaves the count as it found it');
});

test('waitWhileEqual counts itself among the sleepers while its asynchronous wait is pending', async () => {
  const words = new Int32Array(new SharedArrayBuffer(64));
  const ctx = { spinMs: 0, spinYields: false, check: () => {}, sliceMs: () => 60_000 };
  let done = false;
  const waiting = waitWhileEqual(words, WORD, SLEEPERS, 0, ctx).then(() => {
    done = true;
  });
  assert.equal(Atomics.load(words, SLEEPERS), 1, 'registered before its first sleep');
  Atomics.store(words, WORD, 7);
  wake(words, WORD, SLEEPERS);
  await waiting;
  assert.equal(done, true);
  assert.equal(Atomics.load(words, SLEEPERS), 0);
});
