import assert from 'node:assert/strict';
import { test } from 'node:test';
import { handOffOf } from '../../src/tuner/calibrate.js';

/** A timer that returns the scripted times in turn. */
const scripted = (times: number[]) => async () => {
  const next = times.shift();
  assert.ok(next !== undefined, 'timed more often than scripted');
  return next;
};

test('hand-off: the ring minus recursive doubling, the rest the call', async () => {
  const lines: string[] = [];
  assert.deepEqual(await handOffOf(scripted([8]), scripted([10]), (l) => lines.push(l)), { callUs: 6, messageUs: 2 });
  assert.deepEqual(lines, []);
});

test('hand-off: a ring that reads faster than recursive doubling has both timed again, each keeping its fastest', async () => {
  const lines: string[] = [];
  // A stall fell on the first recursive doubling (11.8); its second timing is 5.
  const result = await handOffOf(scripted([11.8, 5]), scripted([6.7, 7.5]), (l) => lines.push(l));
  assert.ok(Math.abs(result.messageUs - 1.7) < 1e-9 && Math.abs(result.callUs - 3.3) < 1e-9, JSON.stringify(result));
  assert.equal(lines.length, 1);
  assert.match(lines[0], /faster than recursive doubling: timing both again/);
});

test('hand-off: still contradictory after the retries, it says so and keeps the bounds', async () => {
  const lines: string[] = [];
  const result = await handOffOf(scripted([12, 12, 12, 12]), scripted([6, 6, 6, 6]), (l) => lines.push(l));
  assert.deepEqual(result, { callUs: 12, messageUs: 0 });
  assert.equal(lines.filter((l) => l.includes('timing both again')).length, 3);
  assert.match(lines[lines.length - 1], /warning: the ring still read faster/);
});
