import assert from 'node:assert/strict';
import { test } from 'node:test';
import { keepArena, takeArena } from '../../src/launch/arena-pool.js';
import { runFixture } from '../harness/ranks.js';

test('a kept arena comes back empty: bytes zeroed, allocation from the start, its pages still there', () => {
  const first = takeArena();
  const offset = first.allocate(3 << 20);
  first.bytes(offset, 3 << 20).fill(7);
  first.markLost(3);
  const grown = first.memory.buffer.byteLength;
  keepArena(first, [1, { loss: [0.5] }, new Float64Array(2)]);
  const second = takeArena();
  assert.equal(second.memory, first.memory, 'the next job gets the same memory');
  assert.equal(second.memory.buffer.byteLength, grown);
  assert.ok(!second.anyLost() && !second.isLost(3), 'no rank of the new job is lost');
  assert.ok(
    second.bytes(offset, grown - offset).every((b) => b === 0),
    'every byte the first job had is zero',
  );
  assert.equal(second.allocate(3 << 20), offset, 'allocation starts over');
  assert.notEqual(takeArena().memory, first.memory, 'taken once, it is no longer kept');
});

test('an arena whose job returned shared memory is not kept (a result may be a view into it)', () => {
  for (const result of [
    new Float32Array(new SharedArrayBuffer(16)),
    { nested: [new Map([['view', new Uint8Array(new SharedArrayBuffer(4))]])] },
    new Set([new SharedArrayBuffer(8)]),
  ]) {
    const arena = takeArena();
    keepArena(arena, [undefined, result]);
    assert.notEqual(takeArena().memory, arena.memory);
  }
});

test('of two jobs that ran side by side, the larger arena is kept', () => {
  const small = takeArena();
  const large = takeArena();
  large.allocate(64 << 20);
  keepArena(large, []);
  keepArena(small, []);
  assert.equal(takeArena().memory, large.memory);
});

test('jobs one after another in a reused arena read zeros from new buffers and reduce right', async () => {
  for (let job = 0; job < 3; job++) {
    const { results } = await runFixture('reused-arena-rank', 4, { count: 1 << 18 });
    assert.deepEqual(results.flat(), [], `job ${job}`);
  }
});
