import assert from 'node:assert/strict';
import { test } from 'node:test';
import { Intake } from '../../../src/transport/tcp/intake.js';

test('intake: bytes that come before a handler are kept, copied, and handed over first, in order', () => {
  const intake = new Intake();
  const reused = Buffer.from([1, 2, 3]); // a Buffer's slice() would be a view, not a copy
  intake.feed(reused);
  reused.set([4, 5, 6]); // the read buffer is reused by the next read
  intake.feed(reused);
  const seen: number[] = [];
  intake.attach((bytes) => seen.push(...bytes));
  intake.feed(new Uint8Array([7]));
  assert.deepEqual(seen, [1, 2, 3, 4, 5, 6, 7]);
});

test('intake: a handler that detaches with the rest of a chunk leaves it first in line for the next', () => {
  const intake = new Intake();
  const first: number[] = [];
  intake.attach((bytes) => { first.push(bytes[0], bytes[1]); intake.detach(bytes.subarray(2)); });
  intake.feed(new Uint8Array([1, 2, 3, 4]));
  intake.feed(new Uint8Array([5]));
  const second: number[] = [];
  intake.attach((bytes) => second.push(...bytes));
  assert.deepEqual(first, [1, 2]);
  assert.deepEqual(second, [3, 4, 5]);
});
