import type { GradSaveFunc, Tensor } from '@tensorflow/tfjs';
import type { Tf } from './load-tf.js';

// The operations of the GPT model, shared by its plain layers and its tensor-parallel ones.

/**
 * A 2-D product whose gradient transposes explicitly and multiplies plainly: TensorFlow.js's own
 * gradient uses transposed products, which the wasm backend runs 15-40x slower than a transpose
 * and a plain product (measured shapes in docs/TRAINING.md).
 */
export function matMul(tf: Tf, a: Tensor, b: Tensor): Tensor {
  const product = tf.customGrad(((x: Tensor, w: Tensor, save: GradSaveFunc) => {
    save([x, w]);
    return {
      value: tf.matMul(x, w),
      gradFunc: (dy: Tensor, [sx, sw]: Tensor[]) => [tf.matMul(dy, tf.transpose(sw)), tf.matMul(tf.transpose(sx), dy)],
    };
  }) as unknown as Parameters<Tf['customGrad']>[0]);
  return product(a, b) as Tensor;
}

export function layerNorm(tf: Tf, x: Tensor, gain: Tensor, bias: Tensor): Tensor {
  const { mean, variance } = tf.moments(x, -1, true);
  return tf.add(tf.mul(tf.div(tf.sub(x, mean), tf.sqrt(tf.add(variance, 1e-5))), gain), bias);
}

/** GPT-2's tanh approximation of GELU, from plain ops (TensorFlow.js has no GELU kernel). */
export function gelu(tf: Tf, x: Tensor): Tensor {
  const inner = tf.mul(Math.sqrt(2 / Math.PI), tf.add(x, tf.mul(0.044715, tf.mul(x, tf.mul(x, x)))));
  return tf.mul(tf.mul(0.5, x), tf.add(1, tf.tanh(inner)));
}

/**
 * Causal self-attention of `h` [rows, t, dim] without the output bias: the heads are those whose
 * query, key and value columns `wqkv` holds ([dim, 3 * heads * headDim], q then k then v), and
 * `wo` maps them back to the model's width, so a tensor-parallel rank with a share of the heads
 * gets its share of the sum.
 */
export function attention(tf: Tf, h: Tensor, wqkv: Tensor, bqkv: Tensor, wo: Tensor, heads: number): Tensor {
  const [rows, t, dim] = h.shape as number[];
  const width = (wqkv.shape[1] as number) / 3;
  const headDim = width / heads;
  const splitHeads = (v: Tensor) => tf.transpose(tf.reshape(v, [rows, t, heads, headDim]), [0, 2, 1, 3]);
  const qkv = tf.add(matMul(tf, tf.reshape(h, [rows * t, dim]), wqkv), bqkv);
  const [q, k, v] = tf.split(qkv, 3, 1).map(splitHeads);
  const causal = tf.mul(tf.sub(1, tf.linalg.bandPart(tf.ones([t, t]), -1, 0)), -1e9);
  const scores = tf.add(tf.mul(tf.matMul(q, k, false, true), 1 / Math.sqrt(headDim)), causal);
  const attended = tf.reshape(tf.transpose(tf.matMul(tf.softmax(scores), v), [0, 2, 1, 3]), [rows * t, width]);
  return tf.reshape(matMul(tf, attended, wo), [rows, t, dim]);
}

/** The MLP of `h` without its output bias: GELU(h w1 + b1) w2, a share of the sum when w1's columns and w2's rows are a share. */
export function mlp(tf: Tf, h: Tensor, w1: Tensor, b1: Tensor, w2: Tensor): Tensor {
  const [rows, t, dim] = h.shape as number[];
  const inner = gelu(tf, tf.add(matMul(tf, tf.reshape(h, [rows * t, dim]), w1), b1));
  return tf.reshape(matMul(tf, inner, w2), [rows, t, dim]);
}
