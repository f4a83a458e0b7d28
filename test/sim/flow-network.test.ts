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

/** Max-min rates by plain progressive filling, one bottleneck link at a time: the reference the engine's shortcuts must match. */
const referenceRates = (capacity: number[], paths: number[][]): number[] => {
  const rates = paths.map(() => -1);
  const left = [...capacity];
  for (;;) {
    let best = Infinity;
    let bottleneck = -1;
    left.forEach((cap, link) => {
      const count = paths.filter((p, i) => rates[i] < 0 && p.includes(link)).length;
      if (count > 0 && cap / count < best) {
        best = cap / count;
        bottleneck = link;
      }
    });
    if (bottleneck < 0) return rates;
    paths.forEach((p, i) => {
      if (rates[i] >= 0 || !p.includes(bottleneck)) return;
      rates[i] = best;
      for (const link of p) left[link] -= best;
    });
  }
};

/** A seeded generator of numbers in [0, 1). */
const seeded = (start: number) => {
  let seed = start;
  return () => {
    seed = (seed * 1103515245 + 12345) % 2 ** 31;
    return seed / 2 ** 31;
  };
};

/**
 * Runs the flows (each of the first `followers.length` followed on its own path by another when
 * it ends, a place taken in the same instant) and checks every end against plain progressive
 * filling from scratch after every change.
 */
const matchesReference = (
  capacity: number[],
  flows: { path: number[]; bytes: number }[],
  followers: { path: number[]; bytes: number }[],
  neverBinds?: Uint8Array,
) => {
  const n = flows.length;
  const expected: number[] = [];
  {
    let now = 0;
    const active = flows.map((f, i) => ({ id: i, path: f.path, left: f.bytes }));
    while (active.length > 0) {
      const rates = referenceRates(
        capacity,
        active.map((f) => f.path),
      );
      const step = Math.min(...active.map((f, i) => f.left / rates[i]));
      now += step;
      const ended: number[] = [];
      active.forEach((f, i) => {
        f.left -= rates[i] * step;
        if (f.left <= 1e-9 * (flows[f.id]?.bytes ?? 1)) ended.push(i);
      });
      for (const i of ended.reverse()) {
        const [f] = active.splice(i, 1);
        expected[f.id] = now;
        if (f.id < followers.length)
          active.push({ id: n + f.id, path: followers[f.id].path, left: followers[f.id].bytes });
      }
    }
  }
  const queue = new EventQueue();
  const done: number[] = [];
  const paths = flows.map((f) => Int32Array.from(f.path));
  const network = new FlowNetwork(
    queue,
    Float64Array.from(capacity),
    (id: number) => {
      done[id] = queue.now;
      if (id < followers.length) network.start(paths[id], followers[id].bytes, n + id);
    },
    neverBinds,
  );
  flows.forEach((f, i) => {
    network.start(paths[i], f.bytes, i);
  });
  queue.run();
  assert.equal(done.filter((t) => t !== undefined).length, n + followers.length);
  for (let id = 0; id < n + followers.length; id++)
    assert.ok(
      Math.abs(done[id] - expected[id]) <= 1e-6 * expected[id],
      `flow ${id}: ${done[id]} against ${expected[id]}`,
    );
};

test('hundreds of flows in flight, refilled near each change, end when plain progressive filling says they do', () => {
  // 300 flows over 12 links with random paths and sizes.
  const random = seeded(7);
  const capacity = Array.from({ length: 12 }, () => 5 + Math.floor(random() * 20));
  const flows = Array.from({ length: 300 }, () => {
    const path = [...new Set(Array.from({ length: 1 + Math.floor(random() * 4) }, () => Math.floor(random() * 12)))];
    return { path, bytes: 100 + Math.floor(random() * 5000) };
  });
  const followers = flows.slice(0, 60).map((f) => ({ path: f.path, bytes: 50 + Math.floor(random() * 2000) }));
  matchesReference(capacity, flows, followers);
});

test('a change that reaches a few hops, along a line of 150 links, is refilled by widening and ends right', () => {
  // Each flow crosses 1-3 neighbouring links of a line, so a rate that moves passes its share on
  // to the next link's flows, and the next: a local refill fails its check and widens.
  for (const start of [11]) {
    const random = seeded(start);
    const capacity = Array.from({ length: 150 }, () => 5 + Math.floor(random() * 20));
    const flows = Array.from({ length: 320 }, () => {
      const first = Math.floor(random() * 148);
      const path = Array.from({ length: 1 + Math.floor(random() * 3) }, (_, k) => first + k);
      return { path, bytes: 100 + Math.floor(random() * 5000) };
    });
    const followers = flows.slice(0, 40).map((f) => ({ path: f.path, bytes: 50 + Math.floor(random() * 2000) }));
    matchesReference(capacity, flows, followers);
  }
});

test('links marked as never binding are left out of the refills and the flows end at the same times', () => {
  // Links 0-3 are NICs of 10 each into a leaf whose uplink, link 4, carries 40: every flow that
  // crosses the uplink came through one of them, so the uplink can never bind.
  const random = seeded(5);
  const capacity = [10, 10, 10, 10, 40, 25, 25];
  const flows = Array.from({ length: 300 }, () => {
    const nic = Math.floor(random() * 4);
    const path = random() < 0.7 ? [nic, 4, 5 + Math.floor(random() * 2)] : [nic];
    return { path, bytes: 100 + Math.floor(random() * 5000) };
  });
  const followers = flows.slice(0, 50).map((f) => ({ path: f.path, bytes: 50 + Math.floor(random() * 2000) }));
  matchesReference(capacity, flows, followers, Uint8Array.from([0, 0, 0, 0, 1, 0, 0]));
});
