import type { GradSaveFunc, Tensor } from '@tensorflow/tfjs';
import { invalidArgument } from '../errors.js';
import type { LayeredModel, ModelLayer } from './layered-model.js';
import type { Tf } from './load-tf.js';

export interface GptConfig {
  vocabSize: number;
  /** The longest sequence the model reads (its position table's length). */
  seqLen: number;
  /** Width of the residual stream. */
  dim: number;
  heads: number;
  layers: number;
  /** Hidden width of the MLP as a multiple of dim; 4 as in GPT-2. */
  mlpRatio?: number;
  /** Seed of the initial weights: equal seeds give equal models on every rank and machine. */
  seed?: number;
}

const INIT_STD = 0.02;

/**
 * A small GPT-style decoder (token and position embeddings, pre-norm blocks of causal
 * self-attention and a GELU MLP, a final layer norm and an output projection), as layers:
 * 'embed', 'block0'..'blockN-1', 'head'. Inputs are token ids [rows, seqLen] (int32), targets
 * the next token of each position.
 */
export function createGpt(tf: Tf, config: GptConfig): LayeredModel {
  const { vocabSize, seqLen, dim, heads, layers } = config;
  const mlpRatio = config.mlpRatio ?? 4;
  for (const [name, value] of Object.entries({ vocabSize, seqLen, dim, heads, layers, mlpRatio })) {
    if (!Number.isInteger(value) || value < 1) {
      throw invalidArgument(`createGpt: ${name} must be a positive integer, got ${value}`, { argument: name });
    }
  }
  if (dim % heads !== 0) {
    throw invalidArgument(`createGpt: dim (${dim}) must be a multiple of heads (${heads})`, { argument: 'heads' });
  }
  let seed = config.seed ?? 0;
  const normal = (shape: number[]) => tf.variable(tf.randomNormal(shape, 0, INIT_STD, 'float32', seed++));
  const filled = (shape: number[], value: number) => tf.variable(tf.fill(shape, value));
  const hidden = dim * mlpRatio;

  const embed: ModelLayer = {
    name: 'embed',
    params: [normal([vocabSize, dim]), normal([seqLen, dim])],
    forward(ids, [tokens, positions]) {
      const [rows, t] = ids.shape as number[];
      // A one-hot product rather than a gather: the gather's gradient (UnsortedSegmentSum) has no wasm kernel.
      const looked = matMul(tf, tf.oneHot(tf.reshape(ids, [rows * t]), vocabSize), tokens);
      return tf.add(tf.reshape(looked, [rows, t, dim]), tf.slice(positions, [0, 0], [t, dim]));
    },
  };
  const blocks = Array.from(
    { length: layers },
    (_, i): ModelLayer => ({
      name: `block${i}`,
      params: [
        filled([dim], 1),
        filled([dim], 0),
        normal([dim, 3 * dim]),
        filled([3 * dim], 0),
        normal([dim, dim]),
        filled([dim], 0),
        filled([dim], 1),
        filled([dim], 0),
        normal([dim, hidden]),
        filled([hidden], 0),
        normal([hidden, dim]),
        filled([dim], 0),
      ],
      forward: (x, p) => block(tf, x, p, heads),
    }),
  );
  const head: ModelLayer = {
    name: 'head',
    params: [filled([dim], 1), filled([dim], 0), normal([dim, vocabSize])],
    forward(x, [gain, bias, out]) {
      const [rows, t] = x.shape as number[];
      return tf.reshape(matMul(tf, tf.reshape(layerNorm(tf, x, gain, bias), [rows * t, dim]), out), [
        rows,
        t,
        vocabSize,
      ]);
    },
  };
  return {
    tf,
    layers: [embed, ...blocks, head],
    loss(logits, targets) {
      const rows = targets.size;
      return tf.losses.softmaxCrossEntropy(
        tf.oneHot(tf.reshape(targets, [rows]), vocabSize),
        tf.reshape(logits, [rows, vocabSize]),
      );
    },
  };
}

/**
 * A 2-D product whose gradient transposes explicitly and multiplies plainly: TensorFlow.js's own
 * gradient uses transposed products, which the wasm backend runs 15-40x slower than a transpose
 * and a plain product (measured shapes in docs/TRAINING.md).
 */
function matMul(tf: Tf, a: Tensor, b: Tensor): Tensor {
  const product = tf.customGrad(((x: Tensor, w: Tensor, save: GradSaveFunc) => {
    save([x, w]);
    return {
      value: tf.matMul(x, w),
      gradFunc: (dy: Tensor, [sx, sw]: Tensor[]) => [tf.matMul(dy, tf.transpose(sw)), tf.matMul(tf.transpose(sx), dy)],
    };
  }) as unknown as Parameters<Tf['customGrad']>[0]);
  return product(a, b) as Tensor;
}

function layerNorm(tf: Tf, x: Tensor, gain: Tensor, bias: Tensor): Tensor {
  const { mean, variance } = tf.moments(x, -1, true);
  return tf.add(tf.mul(tf.div(tf.sub(x, mean), tf.sqrt(tf.add(variance, 1e-5))), gain), bias);
}

/** GPT-2's tanh approximation of GELU, from plain ops (TensorFlow.js has no GELU kernel). */
function gelu(tf: Tf, x: Tensor): Tensor {
  const inner = tf.mul(Math.sqrt(2 / Math.PI), tf.add(x, tf.mul(0.044715, tf.mul(x, tf.mul(x, x)))));
  return tf.mul(tf.mul(0.5, x), tf.add(1, tf.tanh(inner)));
}

function block(tf: Tf, x: Tensor, p: readonly Tensor[], heads: number): Tensor {
  const [ln1g, ln1b, wqkv, bqkv, wo, bo, ln2g, ln2b, w1, b1, w2, b2] = p;
  const [rows, t, dim] = x.shape as number[];
  const headDim = dim / heads;
  const flat = (v: Tensor) => tf.reshape(v, [rows * t, v.shape[v.rank - 1] as number]);
  const dense = (v: Tensor, w: Tensor, b: Tensor) => tf.add(matMul(tf, v, w), b);
  const splitHeads = (v: Tensor) => tf.transpose(tf.reshape(v, [rows, t, heads, headDim]), [0, 2, 1, 3]);

  const [q, k, v] = tf.split(dense(flat(layerNorm(tf, x, ln1g, ln1b)), wqkv, bqkv), 3, 1).map(splitHeads);
  const causal = tf.mul(tf.sub(1, tf.linalg.bandPart(tf.ones([t, t]), -1, 0)), -1e9);
  const scores = tf.add(tf.mul(tf.matMul(q, k, false, true), 1 / Math.sqrt(headDim)), causal);
  const attended = tf.reshape(tf.transpose(tf.matMul(tf.softmax(scores), v), [0, 2, 1, 3]), [rows * t, dim]);
  const x1 = tf.add(x, tf.reshape(dense(attended, wo, bo), [rows, t, dim]));
  const mlp = dense(gelu(tf, dense(flat(layerNorm(tf, x1, ln2g, ln2b)), w1, b1)), w2, b2);
  return tf.add(x1, tf.reshape(mlp, [rows, t, dim]));
}
