import assert from 'node:assert/strict';
import { test } from 'node:test';
import { fastestOfLaunches, handOffOf, timeConsistently } from '../../src/tune/calibrate.js';

/** A timer of the small calls that returns the scripted timings in turn. */
const scripted = (runs: number[][]) => async () => {
  const next = runs.shift();
  assert.ok(next !== undefined, 'timed more often than scripted');
  return next;
};

test('hand-off: the ring minus recursive doubling, the rest the call', () => {
  const lines: string[] = [];
  assert.deepEqual(
    handOffOf(8, 10, (l) => lines.push(l)),
    { callUs: 6, messageUs: 2 },
  );
  assert.deepEqual(lines, []);
});

test('hand-off: a ring faster than recursive doubling reads as no hand-off, with a warning', () => {
  const lines: string[] = [];
  assert.deepEqual(
    handOffOf(12, 6, (l) => lines.push(l)),
    { callUs: 12, messageUs: 0 },
  );
  assert.match(lines[0], /warning: the ring still read faster/);
});

test('small calls: timings that agree are kept as they came', async () => {
  const lines: string[] = [];
  assert.deepEqual(await timeConsistently(scripted([[5, 7, 3]]), (l) => lines.push(l)), [5, 7, 3]);
  assert.deepEqual(lines, []);
});

test('small calls: a ring that reads faster than recursive doubling has all timed again, each keeping its fastest', async () => {
  const lines: string[] = [];
  // A stall fell on the first recursive doubling (11.8); its second timing is 5.
  const times = await timeConsistently(
    scripted([
      [11.8, 6.7, 3],
      [5, 7.5, 3.5],
    ]),
    (l) => lines.push(l),
  );
  assert.deepEqual(times, [5, 6.7, 3]);
  assert.equal(lines.length, 1);
  assert.match(lines[0], /faster than recursive doubling: timing the small calls again/);
});

test('small calls: a ring over twice recursive doubling is timed again too, at most 3 times', async () => {
  const lines: string[] = [];
  const times = await timeConsistently(
    scripted([
      [4, 20],
      [4, 19],
      [4, 18],
      [4, 17],
    ]),
    (l) => lines.push(l),
  );
  assert.deepEqual(times, [4, 17]);
  assert.equal(lines.filter((l) => l.includes('over twice recursive doubling')).length, 3);
});

test('launches: each call keeps its fastest launch, so one launch in a slow state does not set the profile', async () => {
  // The second launch met the slow state (32 KiB one-shot 20 us); the third was quicker at 8 B only.
  const times = await fastestOfLaunches(
    scripted([
      [1.3, 6.6],
      [1.9, 20.1],
      [1.2, 7.0],
    ]),
    3,
  );
  assert.deepEqual(times, [1.2, 6.6]);
});

test('launches: one launch is timed once', async () => {
  assert.deepEqual(await fastestOfLaunches(scripted([[4, 5]]), 1), [4, 5]);
});
