import assert from 'node:assert/strict';
import { test } from 'node:test';
import { EventQueue } from '../../src/sim/event-queue.js';
import { FlowNetwork } from '../../src/sim/flow-network.js';

const finishTimes = (capacity: number[], flows: { path: number[]; bytes: number }[]) => {
  const queue = new EventQueue();
  const done: number[] = [];
  const network = new FlowNetwork(queue, Float64Array.from(capacity), (i: number) => {
    done[i] = queue.now;
  });
  flows.forEach((f, i) => {
    network.start(Int32Array.from(f.path), f.bytes, i);
  });
  queue.run();
  return done;
};

test('two flows on one link share it equally, then the survivor speeds up', () => {
  // capacity 10 bytes/us: both run at 5; the 100-byte flow ends at 20, the other has 100 left at 10/us.
  assert.deepEqual(
    finishTimes(
      [10],
      [
        { path: [0], bytes: 100 },
        { path: [0], bytes: 200 },
      ],
    ),
    [20, 30],
  );
});

test('max-min: a flow limited elsewhere leaves the rest of a shared link to the other', () => {
  // A crosses links 0 (cap 10) and 1 (cap 100); B only link 1. Max-min gives A 10 and B 90.
  const [a, b] = finishTimes(
    [10, 100],
    [
      { path: [0, 1], bytes: 100 },
      { path: [1], bytes: 900 },
    ],
  );
  assert.equal(a, 10);
  assert.equal(b, 10);
});

test('empty transfers complete at once', () => {
  assert.deepEqual(
    finishTimes(
      [10],
      [
        { path: [0], bytes: 0 },
        { path: [], bytes: 50 },
      ],
    ),
    [0, 0],
  );
});
