import assert from 'node:assert/strict';
import { test } from 'node:test';
import { loadTf } from '../../src/train/index.js';
import { readValues } from '../../src/train/tensor-values.js';

test("readValues gives a float32 tensor's values as a view of the wasm heap, and other tensors' through dataSync", async () => {
  const tf = await loadTf({ backend: 'wasm' });
  const values = Float32Array.from({ length: 1000 }, (_, i) => Math.sin(i));
  const t = tf.tidy(() => tf.tensor(values, [10, 100]).mul(2));
  const read = readValues(tf, t);
  assert.deepEqual([...read], [...(t.dataSync() as Float32Array)]);
  assert.equal(read[999], Math.fround(Math.fround(Math.sin(999)) * 2));
  // A view of the heap, not a copy: its buffer is the wasm memory, far larger than the tensor.
  assert.ok(read.buffer.byteLength > t.size * 4, `buffer of ${read.buffer.byteLength} bytes`);
  const ints = tf.tensor([1, 2, 3], [3], 'int32');
  const copied = readValues(tf, ints);
  assert.ok(copied instanceof Float32Array);
  assert.equal(copied.buffer.byteLength, 12);
  assert.deepEqual([...copied], [1, 2, 3]);
  t.dispose();
  ints.dispose();
});
