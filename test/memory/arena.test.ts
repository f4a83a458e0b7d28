import assert from 'node:assert/strict';
import { test } from 'node:test';
import { Arena, sizeClass } from '../../src/memory/arena.js';

test('size classes: 64-byte steps to 4 KiB, then at most 1/8 more than asked, 8 per power of two', () => {
  for (const bytes of [1, 63, 64, 65, 4095, 4096, 4097, 5000, 65537, 1 << 20, (1 << 20) + 1, 9_999_999, 2 ** 31 + 5]) {
    const size = sizeClass(bytes);
    assert.ok(size >= bytes && size % 64 === 0, `${bytes} -> ${size}`);
    assert.ok(bytes <= 4096 ? size - bytes < 64 : size <= bytes * 1.125, `${bytes} -> ${size}`);
  }
  const classes = new Set(Array.from({ length: 1 << 12 }, (_, i) => sizeClass((1 << 20) + (i + 1) * 256)));
  assert.equal(classes.size, 8, 'requests over 1 MiB, up to 2 MiB, share 8 block sizes');
});

test('a stream of different sizes, each freed before the next, reuses a bounded set of blocks', () => {
  const arena = Arena.create();
  const start = arena.memory.buffer.byteLength;
  // 3000 requests of 1-9 MiB, every size different: 15 GiB in all, where exact sizes took new memory each time.
  for (let i = 0; i < 3000; i++) arena.free(arena.allocate((1 << 20) + ((i * 7919 * 4) % (8 << 20))));
  const grown = arena.memory.buffer.byteLength - start;
  assert.ok(grown < 256 << 20, `the arena grew by ${grown} bytes`);
});

test('release returns an owned block at once, exactly once, and only blocks of allocateOwned', () => {
  const arena = Arena.create();
  const a = arena.allocateOwned(Float32Array, 1000, 4);
  assert.equal(arena.release(new Float32Array(4)), false);
  assert.equal(arena.release(a.subarray(1)), false);
  assert.equal(arena.release(a), true);
  assert.equal(arena.release(a), false);
  const b = arena.allocateOwned(Float32Array, 1000, 4);
  assert.equal(b.byteOffset, a.byteOffset, 'the released block serves the next request of its class');
});

/** A deterministic stream of numbers in [0, 1). */
function lcg(seed: number): () => number {
  let x = seed >>> 0;
  return () => (x = (Math.imul(x, 1664525) + 1013904223) >>> 0) / 2 ** 32;
}

test('threads whose every request has another size share what they free: 8 threads stay far under 4 GiB', () => {
  const first = Arena.create();
  const threads = [first, ...Array.from({ length: 7 }, () => Arena.attach(first.memory))];
  const next = lcg(7);
  // Each thread keeps 3 blocks of 1 KiB-32 MiB live and frees the oldest for a new one, 400 times:
  // kept by class per thread, as before, that took every class in every thread past 4 GiB.
  const live = threads.map(() => [] as number[]);
  for (let round = 0; round < 400; round++) {
    for (const [t, arena] of threads.entries()) {
      live[t].push(arena.allocate(Math.floor(2 ** (10 + next() * 15))));
      if (live[t].length > 3) arena.free(live[t].shift()!);
    }
  }
  const grown = first.memory.buffer.byteLength;
  assert.ok(grown < 2 ** 31, `the arena grew to ${grown} bytes`);
});

test('no two live blocks overlap while threads allocate and free in any order', () => {
  const first = Arena.create();
  const threads = [first, Arena.attach(first.memory), Arena.attach(first.memory)];
  const next = lcg(11);
  const live: { thread: number; offset: number; bytes: number }[] = [];
  for (let step = 0; step < 4000; step++) {
    const t = Math.floor(next() * threads.length);
    const mine = live.filter((b) => b.thread === t);
    if (mine.length > 0 && next() < 0.45) {
      const block = mine[Math.floor(next() * mine.length)];
      threads[t].free(block.offset);
      live.splice(live.indexOf(block), 1);
    } else {
      const bytes = 1 + Math.floor(2 ** (next() * 26));
      live.push({ thread: t, offset: threads[t].allocate(bytes), bytes });
    }
    if (step % 50 === 0 || step === 3999) {
      const sorted = [...live].sort((a, b) => a.offset - b.offset);
      for (let i = 1; i < sorted.length; i++) {
        const before = sorted[i - 1];
        assert.ok(
          before.offset + before.bytes <= sorted[i].offset,
          `step ${step}: [${before.offset}, +${before.bytes}) overlaps ${sorted[i].offset}`,
        );
      }
      for (const b of sorted) assert.ok(b.offset >= 65536 && b.offset % 64 === 0, `step ${step}: offset ${b.offset}`);
    }
  }
});

test('a block over the thread cache goes back to the bump pointer when it is the top one, and a recycled arena zeroes it', () => {
  const arena = Arena.create();
  const bytes = 65 << 20;
  const offset = arena.allocate(bytes);
  arena.bytes(offset, bytes).fill(0xff);
  arena.free(offset);
  assert.equal(arena.allocate(4096), offset, 'the freed top block is where new memory starts again');
  const fresh = Arena.recycle(arena);
  const seen = fresh.bytes(offset, bytes);
  assert.equal(
    seen.findIndex((b) => b !== 0),
    -1,
    'every byte the job was handed is zero again',
  );
});

test('after forgetting its buffer length a thread views the same memory, and views past the growth another thread made', () => {
  const arena = Arena.create(1 << 20);
  const offset = arena.allocate(4096);
  arena.bytes(offset, 4).set([1, 2, 3, 4]);
  arena.forgetBufferLength();
  assert.deepEqual([...arena.bytes(offset, 4)], [1, 2, 3, 4]);
  // Another thread's growth, as the memory object sees it: this thread's view still reaches it.
  const pages = arena.memory.buffer.byteLength / 65536;
  arena.memory.grow(1);
  const end = pages * 65536;
  const view = arena.bytes(end, 8);
  view.set([9, 9]);
  assert.equal(view.buffer.byteLength, (pages + 1) * 65536);
  assert.deepEqual([...arena.bytes(end, 2)], [9, 9]);
});
