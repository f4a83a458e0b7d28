import type { Tensor } from '@tensorflow/tfjs';
import type { Tf } from './load-tf.js';

/** What the wasm backend offers beside dataSync: a view of a tensor's float32 values where they lie in its heap. */
interface HeapBackend {
  typedArrayFromHeap(info: { shape: number[]; dtype: string; dataId: object }): Float32Array;
}

/**
 * A tensor's values as float32, for reading at once: a view of the wasm backend's heap where the
 * backend offers one (float32 tensors), else dataSync()'s copy, with which a caller that copies
 * the values on (a gradient into its bucket) copies them twice. The view is valid until the next TensorFlow.js
 * call (the heap may grow and move), so copy out of it before any.
 */
export function readValues(tf: Tf, t: Tensor): Float32Array {
  const backend = tf.backend() as unknown as Partial<HeapBackend>;
  if (t.dtype === 'float32' && typeof backend.typedArrayFromHeap === 'function')
    return backend.typedArrayFromHeap(t as unknown as { shape: number[]; dtype: string; dataId: object });
  const values = t.dataSync();
  return values instanceof Float32Array ? values : Float32Array.from(values as ArrayLike<number>);
}
