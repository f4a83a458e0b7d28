import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { CallSettings } from '../../src/comm/call-options.js';
import type { CallPlan } from '../../src/comm/call-plan.js';
import { LastCall } from '../../src/comm/last-call.js';

const settings: CallSettings = { timeoutMs: 1000, signal: undefined, checksum: undefined };
const planOf = (output?: Float32Array) => ({ output }) as unknown as CallPlan;

test('a call with the same name, buffer and option values, in a new options object, takes the kept settings and plan', () => {
  const last = new LastCall();
  const buffer = new Float32Array(4);
  const output = new Float32Array(4);
  const plan = planOf(output);
  last.keep('allReduce', buffer, { output, op: 'max' }, settings, plan);
  const repeated = last.repeated('allReduce', buffer, { output, op: 'max' });
  assert.equal(repeated?.plan, plan);
  assert.equal(repeated?.settings, settings);
  // No options at all repeat a call that had none.
  last.keep('allReduce', buffer, {}, settings, planOf());
  assert.notEqual(last.repeated('allReduce', buffer, {}), undefined);
});

test('any difference in name, buffer, keys, key order or values is not a repeat', () => {
  const last = new LastCall();
  const buffer = new Float32Array(4);
  const output = new Float32Array(4);
  last.keep('allReduce', buffer, { output, op: 'max' }, settings, planOf(output));
  assert.equal(last.repeated('reduceScatter', buffer, { output, op: 'max' }), undefined);
  assert.equal(last.repeated('allReduce', new Float32Array(4), { output, op: 'max' }), undefined);
  assert.equal(last.repeated('allReduce', buffer, { output, op: 'min' }), undefined);
  assert.equal(last.repeated('allReduce', buffer, { output: new Float32Array(4), op: 'max' }), undefined);
  assert.equal(last.repeated('allReduce', buffer, { op: 'max', output }), undefined);
  assert.equal(last.repeated('allReduce', buffer, { output }), undefined);
  // A misspelled extra key must reach the options check, which refuses it.
  assert.equal(last.repeated('allReduce', buffer, { output, op: 'max', opp: 'min' }), undefined);
  // An inherited enumerable key counts, as the options check's for-in sees it.
  const inherited = Object.assign(Object.create({ timeoutMs: 5 }), { output, op: 'max' });
  assert.equal(last.repeated('allReduce', buffer, inherited), undefined);
});

test('an aborted signal, or a buffer or output whose memory was transferred, is not a repeat', () => {
  const last = new LastCall();
  const controller = new AbortController();
  const buffer = new Float32Array(4);
  const withSignal = { ...settings, signal: controller.signal };
  last.keep('allReduce', buffer, { signal: controller.signal }, withSignal, planOf());
  assert.notEqual(last.repeated('allReduce', buffer, { signal: controller.signal }), undefined);
  controller.abort();
  assert.equal(last.repeated('allReduce', buffer, { signal: controller.signal }), undefined);

  last.keep('allReduce', buffer, {}, settings, planOf());
  structuredClone(buffer.buffer, { transfer: [buffer.buffer] });
  assert.equal(buffer.length, 0);
  assert.equal(last.repeated('allReduce', buffer, {}), undefined);

  const input = new Float32Array(4);
  const output = new Float32Array(4);
  last.keep('allReduce', input, { output }, settings, planOf(output));
  structuredClone(output.buffer, { transfer: [output.buffer] });
  assert.equal(last.repeated('allReduce', input, { output }), undefined);
});

test('options whose values can change in place (arrays, objects) are never kept', () => {
  const last = new LastCall();
  const buffer = new Float32Array(4);
  const sendCounts = [1, 1, 1, 1];
  last.keep('allToAll', buffer, { sendCounts }, settings, planOf());
  assert.equal(last.repeated('allToAll', buffer, { sendCounts }), undefined);
  const compression = { format: 'fp16' };
  last.keep('allReduce', buffer, { compression }, settings, planOf());
  assert.equal(last.repeated('allReduce', buffer, { compression }), undefined);
  // Keeping a call that cannot be kept drops the one before it.
  last.keep('allReduce', buffer, {}, settings, planOf());
  last.keep('allReduce', buffer, { compression }, settings, planOf());
  assert.equal(last.repeated('allReduce', buffer, {}), undefined);
  last.keep('allReduce', buffer, {}, settings, planOf());
  last.forget();
  assert.equal(last.repeated('allReduce', buffer, {}), undefined);
});
