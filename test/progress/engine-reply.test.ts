import assert from 'node:assert/strict';
import { test } from 'node:test';
import { Worker } from 'node:worker_threads';
import { readReply, replyBuffer, writeReply } from '../../src/progress/engine-reply.js';

test("a rank takes only its own question's answer from the reply block, not the one before it or a late one", () => {
  const reply = replyBuffer();
  writeReply(reply, 1, { value: 'first' });
  assert.deepEqual(readReply(reply, 1, 1000), { value: 'first' });
  // The first answer is still in the block: asked again, the rank must not take it.
  assert.equal(readReply(reply, 2, 20), undefined);
  // The answer to question 2 (given up on) comes late, after question 3 was asked.
  writeReply(reply, 2, { value: 'late' });
  assert.equal(readReply(reply, 3, 20), undefined);
  writeReply(reply, 3, { value: 'third' });
  assert.deepEqual(readReply(reply, 3, 1000), { value: 'third' });
});

test('a wake-up of the reply block without the answer does not end the wait (a notify that came late)', async () => {
  const reply = replyBuffer();
  writeReply(reply, 1, { value: 'previous' });
  assert.deepEqual(readReply(reply, 1, 1000), { value: 'previous' });
  // A thread that notifies the block's word as an answer's writer would, before writing the
  // answer (with writeReply): the waiting rank must go on waiting and return the answer, not
  // the one before.
  const source = `
    const { workerData } = require('node:worker_threads');
    const words = new Int32Array(workerData.reply, 0, 2);
    const pause = new Int32Array(new SharedArrayBuffer(4));
    while (Atomics.notify(words, 0) === 0) Atomics.wait(pause, 0, 0, 1);
    Atomics.wait(pause, 0, 0, 50);
    import(workerData.module).then(({ writeReply }) => writeReply(workerData.reply, 2, { value: 'second' }));
  `;
  const module = new URL('../../src/progress/engine-reply.js', import.meta.url).href;
  const worker = new Worker(source, { eval: true, workerData: { reply, module } });
  const exited = new Promise((resolve) => worker.once('exit', resolve));
  assert.deepEqual(readReply(reply, 2, 30_000), { value: 'second' });
  await exited;
});
