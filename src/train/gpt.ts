import { invalidArgument } from '../errors.js';
import type { Layer, LayeredModel } from './layered-model.js';
import type { Tf } from './load-tf.js';
import type { Tensor, Variable } from '@tensorflow/tfjs';
import type { CallOptions } from '../comm/call-options.js';
import { attention, layerNorm, matMul, mlp } from './gpt-ops.js';
import { type TensorParallelComm, columnShare, rowShare, tensorParallelResidual } from './tensor-parallel.js';
import { vocabParallelEmbedding, vocabParallelHead, vocabParallelLoss } from './vocab-parallel.js';

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
  /**
   * The tensor-parallel group: each attention and MLP layer is split over its ranks (heads and
   * MLP columns divide evenly), holding its share of the weights the same seed gives one rank.
   */
  tensorParallel?: TensorParallelComm;
  /**
   * Under tensor parallelism, split the token embedding by vocabulary rows and the output layer by
   * vocabulary columns as Megatron-LM does (the vocabulary must divide over the group); true by
   * default, false holds both whole on every rank.
   */
  vocabParallel?: boolean;
  /** timeoutMs and signal of the tensor-parallel all-reduces. */
  callOptions?: CallOptions;
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

  /** A rank's share of a weight the seed made whole (so every group size starts from the same model). */
  const shareOf = (whole: Variable, cut: (w: Tensor) => Tensor) => {
    const share = tf.variable(cut(whole));
    whole.dispose();
    return share;
  };
  const tp = config.tensorParallel;
  if (tp !== undefined && (heads % tp.size !== 0 || hidden % tp.size !== 0)) {
    throw invalidArgument(
      `createGpt: heads (${heads}) and the MLP's width (${hidden}) must divide over the ${tp.size} tensor-parallel ranks`,
      { argument: 'tensorParallel' },
    );
  }
  /** The group the vocabulary is split over, if it is. */
  const vocabGroup = tp !== undefined && tp.size > 1 && config.vocabParallel !== false ? tp : undefined;
  if (vocabGroup !== undefined && vocabSize % vocabGroup.size !== 0) {
    throw invalidArgument(
      `createGpt: vocabSize (${vocabSize}) must divide over the ${vocabGroup.size} tensor-parallel ranks to split the embedding and output layer (pad the vocabulary, or set vocabParallel: false)`,
      { argument: 'vocabSize' },
    );
  }
  const embedParams = [normal([vocabSize, dim]), normal([seqLen, dim])];
  const embed: Layer = vocabGroup
    ? vocabParallelEmbedding(
        tf,
        vocabGroup,
        {
          tokens: shareOf(embedParams[0], (w) => rowShare(tf, w, vocabGroup.rank, vocabGroup.size)),
          positions: embedParams[1],
        },
        config.callOptions,
      )
    : {
        name: 'embed',
        params: embedParams,
        forward(ids, [tokens, positions]) {
          const [rows, t] = ids.shape as number[];
          // A one-hot product rather than a gather: the gather's gradient (UnsortedSegmentSum) has no wasm kernel.
          const looked = matMul(tf, tf.oneHot(tf.reshape(ids, [rows * t]), vocabSize), tokens);
          return tf.add(tf.reshape(looked, [rows, t, dim]), tf.slice(positions, [0, 0], [t, dim]));
        },
      };
  const blocks = Array.from({ length: layers }, (_, i): Layer[] => {
    const attn = [
      filled([dim], 1),
      filled([dim], 0),
      normal([dim, 3 * dim]),
      filled([3 * dim], 0),
      normal([dim, dim]),
      filled([dim], 0),
    ];
    const ffn = [
      filled([dim], 1),
      filled([dim], 0),
      normal([dim, hidden]),
      filled([hidden], 0),
      normal([hidden, dim]),
      filled([dim], 0),
    ];
    if (tp === undefined) {
      return [
        {
          name: `attn${i}`,
          params: attn,
          forward: (x, [gain, bias, wqkv, bqkv, wo, bo]) =>
            tf.add(x, tf.add(attention(tf, layerNorm(tf, x, gain, bias), wqkv, bqkv, wo, heads), bo)),
        },
        {
          name: `mlp${i}`,
          params: ffn,
          forward: (x, [gain, bias, w1, b1, w2, b2]) =>
            tf.add(x, tf.add(mlp(tf, layerNorm(tf, x, gain, bias), w1, b1, w2), b2)),
        },
      ];
    }
    const { rank, size } = tp;
    const columns = (w: Variable, parts = 1) => shareOf(w, (v) => columnShare(tf, v, rank, size, parts));
    const rows = (w: Variable) => shareOf(w, (v) => rowShare(tf, v, rank, size));
    return [
      tensorParallelResidual(
        tf,
        tp,
        `attn${i}`,
        {
          gain: attn[0],
          bias: attn[1],
          share: [columns(attn[2], 3), columns(attn[3], 3), rows(attn[4])],
          outBias: attn[5],
        },
        (h, [wqkv, bqkv, wo]) => attention(tf, h, wqkv, bqkv, wo, heads / size),
        config.callOptions,
      ),
      tensorParallelResidual(
        tf,
        tp,
        `mlp${i}`,
        { gain: ffn[0], bias: ffn[1], share: [columns(ffn[2]), columns(ffn[3]), rows(ffn[4])], outBias: ffn[5] },
        (h, [w1, b1, w2]) => mlp(tf, h, w1, b1, w2),
        config.callOptions,
      ),
    ];
  }).flat();
  const headParams = [filled([dim], 1), filled([dim], 0), normal([dim, vocabSize])];
  const head: Layer = vocabGroup
    ? vocabParallelHead(
        tf,
        vocabGroup,
        {
          gain: headParams[0],
          bias: headParams[1],
          out: shareOf(headParams[2], (w) => columnShare(tf, w, vocabGroup.rank, vocabGroup.size)),
        },
        config.callOptions,
      )
    : {
        name: 'head',
        params: headParams,
        forward(x, [gain, bias, out]) {
          const [rows, t] = x.shape as number[];
          return tf.reshape(matMul(tf, tf.reshape(layerNorm(tf, x, gain, bias), [rows * t, dim]), out), [
            rows,
            t,
            vocabSize,
          ]);
        },
      };
  const shape = { blocks: layers, hidden: dim, sequence: seqLen };
  if (vocabGroup !== undefined)
    return {
      tf,
      shape,
      layers: [embed, ...blocks, head],
      ...vocabParallelLoss(tf, vocabGroup, vocabSize / vocabGroup.size, config.callOptions),
    };
  return {
    tf,
    shape,
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
