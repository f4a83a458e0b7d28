import assert from 'node:assert/strict';
import { test } from 'node:test';
import { CONTROL_WORDS } from '../../src/memory/arena.js';
import {
  EXTENT_COUNT,
  EXTENT_TABLE,
  addExtent,
  extentCapacity,
  freeExtentUnits,
  takeExtent,
  takeExtentEndingAt,
} from '../../src/memory/free-extents.js';

const table = (slots = EXTENT_TABLE + 64) => new Int32Array(slots);
const ranges = (w: Int32Array) =>
  Array.from({ length: w[EXTENT_COUNT] }, (_, i) => [w[EXTENT_TABLE + 2 * i], w[EXTENT_TABLE + 2 * i + 1]]);

test('the range table starts past the control words the arena already uses', () => {
  assert.ok(
    EXTENT_TABLE >= CONTROL_WORDS && EXTENT_COUNT < 16,
    `table at ${EXTENT_TABLE}, control words ${CONTROL_WORDS}`,
  );
});

test('freed ranges merge with the neighbours they touch, whatever order they come in', () => {
  const w = table();
  assert.ok(addExtent(w, 10, 5));
  assert.ok(addExtent(w, 30, 5));
  assert.deepEqual(ranges(w), [
    [10, 5],
    [30, 5],
  ]);
  assert.ok(addExtent(w, 15, 5)); // joins the one before
  assert.ok(addExtent(w, 25, 5)); // joins the one after
  assert.deepEqual(ranges(w), [
    [10, 10],
    [25, 10],
  ]);
  assert.ok(addExtent(w, 20, 5)); // joins both
  assert.deepEqual(ranges(w), [[10, 25]]);
  assert.ok(addExtent(w, 0, 3));
  assert.deepEqual(ranges(w), [
    [0, 3],
    [10, 25],
  ]);
});

test('a request takes the smallest range that holds it, from its start', () => {
  const w = table();
  addExtent(w, 0, 8);
  addExtent(w, 100, 3);
  addExtent(w, 200, 5);
  assert.equal(takeExtent(w, 4), 200);
  assert.deepEqual(ranges(w), [
    [0, 8],
    [100, 3],
    [204, 1],
  ]);
  assert.equal(takeExtent(w, 3), 100);
  assert.equal(takeExtent(w, 9), undefined);
  assert.equal(takeExtent(w, 8), 0);
  assert.deepEqual(ranges(w), [[204, 1]]);
});

test('the last range gives itself back to a bump pointer it ends at, and only then', () => {
  const w = table();
  addExtent(w, 0, 4);
  addExtent(w, 10, 6);
  assert.equal(takeExtentEndingAt(w, 17), undefined);
  assert.equal(takeExtentEndingAt(w, 16), 10);
  assert.deepEqual(ranges(w), [[0, 4]]);
});

test('a full table refuses a range that touches none, and still merges one that does', () => {
  const w = table(EXTENT_TABLE + 4);
  assert.equal(extentCapacity(w.length), 2);
  assert.ok(addExtent(w, 0, 1) && addExtent(w, 10, 1));
  assert.equal(addExtent(w, 20, 1), false);
  assert.ok(addExtent(w, 11, 1));
  assert.deepEqual(ranges(w), [
    [0, 1],
    [10, 2],
  ]);
});

test('the ranges count what they hold in all', () => {
  const w = table();
  addExtent(w, 0, 4);
  addExtent(w, 10, 6);
  addExtent(w, 4, 2);
  assert.equal(freeExtentUnits(w), 12);
});
