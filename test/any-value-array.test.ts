import assert from 'node:assert/strict';
import { test } from 'node:test';
import { anyValueArray } from '../src/any-value-array.js';
import { holdsAnyValue } from './harness/v8-shapes.js';

test('an any-value array starts in the elements kind a [] reaches only after objects and gaps', () => {
  assert.equal(holdsAnyValue([]), false, 'a [] starts as small integers only');
  const empty = anyValueArray<object>();
  assert.equal(empty.length, 0);
  assert.ok(holdsAnyValue(empty));
  empty.push({});
  assert.deepEqual(empty, [{}]);
});

test('a sized any-value array has its slots, undefined, and stores into them keep its kind', () => {
  const slots = anyValueArray<{ id: number } | undefined>(2);
  assert.deepEqual([...slots], [undefined, undefined]);
  assert.ok(holdsAnyValue(slots));
  slots[1] = { id: 1 };
  assert.equal(slots.length, 2);
  assert.ok(holdsAnyValue(slots));
});
