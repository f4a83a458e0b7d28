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

test('a flow that starts on the path another left in the same instant takes its place and rate, and the rest stay right', () => {
  // Capacity 10 on one link: A (100 B) and B (300 B) run at 5. When A ends at 20, C (100 B)
  // starts on A's path at once and takes A's place at 5; B, with 200 B left, shares until C
  // ends at 40, then runs alone at 10 and ends at 50.
  const queue = new EventQueue();
  const path = Int32Array.of(0);
  const done = new Map<string, number>();
  const network = new FlowNetwork(queue, Float64Array.of(10), (name: string) => {
    done.set(name, queue.now);
    if (name === 'A') network.start(path, 100, 'C');
  });
  network.start(path, 100, 'A');
  network.start(Int32Array.of(0), 300, 'B');
  queue.run();
  assert.deepEqual(Object.fromEntries(done), { A: 20, C: 40, B: 50 });
  // A place left and not taken changes the shares: without C, B speeds up at 20 and ends at 40.
  const alone = new Map<string, number>();
  const second = new EventQueue();
  const network2 = new FlowNetwork(second, Float64Array.of(10), (name: string) => {
    alone.set(name, second.now);
  });
  network2.start(path, 100, 'A');
  network2.start(Int32Array.of(0), 300, 'B');
  second.run();
  assert.deepEqual(Object.fromEntries(alone), { A: 20, B: 40 });
});
