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
