import assert from 'node:assert/strict';
import { test } from 'node:test';
import { INLINE_CHOOSABLE, callSizeBytes, engineMinBytes, runsInline } from '../../src/tuner/progress-choice.js';

test('engineMinBytes: per collective, the smallest power of two whose predicted inline time reaches the hand-off', () => {
  // 1 us per KiB, plus 10 us; twice that for an all-to-all.
  const predict = (collective: string, bytes: number) => (collective === 'allToAll' ? 2 : 1) * (10 + bytes / 1024);
  const limits = engineMinBytes(predict, 200, 4);
  assert.deepEqual([...limits.keys()], INLINE_CHOOSABLE);
  assert.equal(limits.get('allReduce'), 256 * 1024); // 10 + 256 >= 200, 10 + 128 < 200
  assert.equal(limits.get('allToAll'), 128 * 1024); // 2 x (10 + 128) >= 200
  // An all-gather's size is its whole output; the tuner prices it by one rank's block of 4.
  assert.equal(limits.get('allGather'), 1024 * 1024); // 10 + 256 >= 200, 10 + 128 < 200
  assert.ok(runsInline(limits, 'allReduce', 256 * 1024 - 1));
  assert.ok(!runsInline(limits, 'allReduce', 256 * 1024));
  // Gather, scatter, sends: never inline (their sizes differ between ranks).
  assert.ok(!runsInline(limits, 'gather', 8));
  assert.ok(!runsInline(limits, 'send', 8));
  // A hand-off no call reaches: everything inline up to the largest size searched.
  assert.ok(
    runsInline(
      engineMinBytes(() => 1, 2, 4),
      'allReduce',
      2 ** 39,
    ),
  );
});

test('callSizeBytes: what every rank of a call sees alike, or undefined', () => {
  const block = new Float32Array(4);
  const whole = new Float32Array(12);
  assert.equal(callSizeBytes('allReduce', block, {}), 16);
  assert.equal(callSizeBytes('allGather', block, { output: whole }), 48);
  assert.equal(callSizeBytes('allGather', whole, undefined), 48);
  assert.equal(callSizeBytes('allToAll', whole, { sendCounts: [1, 2, 3] }), undefined);
  // Bad input is refused where the call runs, not here.
  assert.equal(callSizeBytes('allReduce', null, {}), undefined);
  assert.equal(callSizeBytes('allReduce', [1, 2], {}), undefined);
});
