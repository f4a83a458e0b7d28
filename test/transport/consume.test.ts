import assert from 'node:assert/strict';
import { test } from 'node:test';
import { combineInto, copyInto } from '../../src/transport/transport.js';
import { sameShape } from '../harness/v8-shapes.js';

test('a copying consumer copies each piece to its place, unless the piece already is that memory', () => {
  const dst = new Uint8Array(8);
  const consume = copyInto(dst);
  assert.equal(consume.into, dst);
  consume(Uint8Array.of(1, 2), 3);
  assert.deepEqual([...dst], [0, 0, 0, 1, 2, 0, 0, 0]);
  const inPlace = dst.subarray(5, 7);
  inPlace.set([7, 8]);
  consume(inPlace, 5);
  assert.deepEqual([...dst], [0, 0, 0, 1, 2, 7, 8, 0]);
});

test('a combining consumer hands each piece and its offset to its function and names no memory', () => {
  const seen: [number[], number][] = [];
  const consume = combineInto((piece, byteOffset) => seen.push([[...piece], byteOffset]));
  assert.equal(consume.into, undefined);
  consume(Uint8Array.of(4, 5), 2);
  assert.deepEqual(seen, [[[4, 5], 2]]);
});

test('both kinds of consumer have one shape, so a transport calling either meets one kind of function', () => {
  assert.ok(
    sameShape(
      copyInto(new Uint8Array(4)),
      combineInto(() => {}),
    ),
  );
});
