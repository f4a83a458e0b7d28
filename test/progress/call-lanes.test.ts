import assert from 'node:assert/strict';
import { test } from 'node:test';
import { CallLanes } from '../../src/progress/call-lanes.js';

/** A call that ends when the test says, noting when it started. */
function call(log: string[], name: string) {
  let end!: () => void;
  const ended = new Promise<void>((resolve) => {
    end = resolve;
  });
  return {
    start: () => {
      log.push(`start ${name}`);
      return ended.then(() => {
        log.push(`end ${name}`);
      });
    },
    end: () => end(),
  };
}

const turn = () => new Promise((resolve) => setImmediate(resolve));

test('CallLanes: calls on one path start at once; the first on the other path waits for every call before it', async () => {
  const log: string[] = [];
  const lanes = new CallLanes();
  const [e1, e2, i1, i2] = ['e1', 'e2', 'i1', 'i2'].map((n) => call(log, n));
  const done = [
    lanes.issue('engine', e1.start),
    lanes.issue('engine', e2.start),
    lanes.issue('inline', i1.start),
    lanes.issue('inline', i2.start),
  ];
  await turn();
  assert.deepEqual(log, ['start e1', 'start e2']);
  e2.end();
  await turn();
  assert.deepEqual(log, ['start e1', 'start e2', 'end e2']);
  e1.end();
  await turn();
  // The inline calls start in the order issued, together, once both engine calls ended.
  assert.deepEqual(log.slice(3), ['end e1', 'start i1', 'start i2']);
  i1.end();
  i2.end();
  await Promise.all(done);
  await lanes.drained();
});

test('CallLanes: engine, inline, engine issued while the first runs end in order, not waiting on each other in a cycle', {
  timeout: 10_000,
}, async () => {
  const log: string[] = [];
  const lanes = new CallLanes();
  const [e1, i1, e2] = ['e1', 'i1', 'e2'].map((n) => call(log, n));
  const done = [lanes.issue('engine', e1.start), lanes.issue('inline', i1.start), lanes.issue('engine', e2.start)];
  const drained = lanes.drained();
  await turn();
  assert.deepEqual(log, ['start e1']);
  e1.end();
  await turn();
  assert.deepEqual(log, ['start e1', 'end e1', 'start i1']);
  i1.end();
  await turn();
  assert.deepEqual(log.slice(3), ['end i1', 'start e2']);
  e2.end();
  await Promise.all(done);
  await drained;
  assert.deepEqual(log.slice(5), ['end e2']);
});

test('CallLanes: a call that throws as it starts rejects its promise and does not hold back the next', async () => {
  const lanes = new CallLanes();
  await assert.rejects(
    lanes.issue('inline', () => {
      throw new Error('bad argument');
    }),
    /bad argument/,
  );
  await lanes.issue('engine', () => Promise.resolve());
  await lanes.drained();
});
