import assert from 'node:assert/strict';
import { test } from 'node:test';
import { Arena } from '../../src/memory/arena.js';
import { sameShape } from '../harness/v8-shapes.js';

// Its own file: V8 keeps one shape per kind of object for the whole process, and a test that ran
// first could have changed it already.
test('an arena keeps its shape when another caches a block whose size is not a small integer', () => {
  const bystander = Arena.create();
  const arena = Arena.create();
  // Sizes above 4 KiB come out of sizeClass's arithmetic as doubles.
  arena.free(arena.allocate(5000));
  assert.ok(sameShape(bystander, arena), 'an arena made before another cached a block');
  assert.ok(sameShape(bystander, Arena.create()), 'an arena made after');
});
