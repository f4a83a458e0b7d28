import assert from 'node:assert/strict';
import { test } from 'node:test';
import { LocalCopy } from '../../src/exec/local-copy.js';

test('LocalCopy: out of place the output gets the input; the input is untouched', () => {
  const input = new Float32Array([1, 2, 3]);
  const output = new Float32Array(3);
  new LocalCopy({ input, output }).run();
  assert.deepEqual([...output], [1, 2, 3]);
  assert.deepEqual([...input], [1, 2, 3]);
});

test('LocalCopy: a later call copies the input as it is then (nothing is cached)', () => {
  const input = new Float32Array([1, 2]);
  const output = new Float32Array(2);
  const copy = new LocalCopy({ input, output });
  copy.run();
  input.set([5, 6]);
  copy.run();
  assert.deepEqual([...output], [5, 6]);
});
