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
 * 'embed', then 'attn<i>' and 'mlp<i>' (each a residual branch with its layer norm) for every
 * block, then 'head'. Inputs are token ids [rows, seqLen] (int32), targets
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
  const blocks = Array.from({ length: layers }, (_, i): ModelLayer[] => [
    {
      name: `attn${i}`,
      params: [
        filled([dim], 1),
        filled([dim], 0),
        normal([dim, 3 * dim]),
        filled([3 * dim], 0),
        normal([dim, dim]),
        filled([dim], 0),
      ],
      forward: (x, [gain, bias, wqkv, bqkv, wo, bo]) =>
        tf.add(x, tf.add(attention(tf, layerNorm(tf, x, gain, bias), wqkv, bqkv, wo, heads), bo)),
    },
    {
      name: `mlp${i}`,
      params: [
        filled([dim], 1),
        filled([dim], 0),
        normal([dim, hidden]),
        filled([hidden], 0),
        normal([hidden, dim]),
        filled([dim], 0),
      ],
      forward: (x, [gain, bias, w1, b1, w2, b2]) =>
        tf.add(x, tf.add(mlp(tf, layerNorm(tf, x, gain, bias), w1, b1, w2), b2)),
    },
  ]).flat();
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

export function layerNorm(tf: Tf, x: Tensor, gain: Tensor, bias: Tensor): Tensor {
  const { mean, variance } = tf.moments(x, -1, true);
  return tf.add(tf.mul(tf.div(tf.sub(x, mean), tf.sqrt(tf.add(variance, 1e-5))), gain), bias);
}

/** GPT-2's tanh approximation of GELU, from plain ops (TensorFlow.js has no GELU kernel). */
function gelu(tf: Tf, x: Tensor): Tensor {
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
