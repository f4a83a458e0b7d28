import type { Tensor, Variable } from '@tensorflow/tfjs';
import type { CallOptions } from '../comm/call-options.js';
import { layerNorm, matMul } from './gpt-ops.js';
import type { CommLayer } from './layered-model.js';
import type { Tf } from './load-tf.js';
import { type TensorParallelComm, reducedOver } from './tensor-parallel.js';

/**
 * Token ids as float one-hot rows over the `share` ids from `first` (a rank's range of the
 * vocabulary), one row a position; an id outside the range gives a row of zeros.
 */
function oneHotInRange(tf: Tf, ids: Tensor, first: number, share: number): Tensor {
  return tf.oneHot(tf.sub(tf.reshape(ids, [ids.size]), tf.scalar(first, 'int32')), share).toFloat();
}

/**
 * Token embedding split over a tensor-parallel group by vocabulary rows, as Megatron-LM's
 * VocabParallelEmbedding: a rank holds rows [rank * share, (rank + 1) * share) of the table and
 * looks up only the tokens in its range (the others' one-hot rows are zero), and forward
 * all-reduces the partial lookups. Backward needs no communication: the gradient of the output
 * is the same on every rank, and each rank's rows take the part of it from its own tokens.
 * Positions are held whole.
 */
export function vocabParallelEmbedding(
  tf: Tf,
  comm: TensorParallelComm,
  parts: { tokens: Variable; positions: Variable },
  callOptions: CallOptions = {},
): CommLayer {
  const { tokens, positions } = parts;
  const [share, dim] = tokens.shape as number[];
  const first = comm.rank * share;
  return {
    name: 'embed',
    params: [tokens, positions],
    async run(ids: Tensor) {
      const [rows, t] = ids.shape as number[];
      const local = tf.tidy(() => oneHotInRange(tf, ids, first, share));
      let looked: Tensor;
      try {
        const partial = tf.tidy(() => matMul(tf, local, tokens));
        try {
          looked = await reducedOver(tf, comm, partial, callOptions);
        } finally {
          partial.dispose();
        }
      } catch (err) {
        local.dispose();
        throw err;
      }
      const output = tf.tidy(() => tf.add(tf.reshape(looked, [rows, t, dim]), tf.slice(positions, [0, 0], [t, dim])));
      looked.dispose();
      return {
        output,
        async backward(dy: Tensor) {
          try {
            const flat = tf.tidy(() => tf.reshape(dy, [rows * t, dim]));
            const dTokens = tf.tidy(() => tf.matMul(tf.transpose(local), flat));
            const dPositions = tf.tidy(() => {
              const perPosition = tf.sum(dy, 0);
              const table = positions.shape[0] as number;
              return table === t
                ? perPosition
                : tf.pad(perPosition, [
                    [0, table - t],
                    [0, 0],
                  ]);
            });
            flat.dispose();
            return { dx: undefined, grads: [dTokens, dPositions] };
          } finally {
            local.dispose();
          }
        },
        release() {
          local.dispose();
        },
      };
    },
  };
}

/**
 * The output layer split over a tensor-parallel group by vocabulary columns, with the
 * cross-entropy's softmax computed in parallel (Megatron-LM's vocab-parallel cross-entropy): each
 * rank computes the logits of its share of the vocabulary and never gathers them. Two all-reduces
 * of one number a position (the rows' maxima, then their sums of exponentials) give the
 * log-sum-exp over the whole vocabulary, and the layer outputs its share of the log-probabilities,
 * z - lse. Backward takes dz = dy - softmax * (dy summed over the whole vocabulary, an all-reduce
 * of one number a position), then all-reduces the gradient of the normed input (Megatron's f), so
 * the layer norm's gradients and the gradient passed down are equal on every rank. The model's
 * loss reads only this rank's share (vocabParallelLoss).
 */
export function vocabParallelHead(
  tf: Tf,
  comm: TensorParallelComm,
  parts: { gain: Variable; bias: Variable; out: Variable },
  callOptions: CallOptions = {},
): CommLayer {
  const { gain, bias, out } = parts;
  const [dim, share] = out.shape as number[];
  /** A per-position column reduced over the group; `t` is disposed. */
  const across = async (t: Tensor, op: 'sum' | 'max'): Promise<Tensor> => {
    try {
      return await reducedOver(tf, comm, t, callOptions, t.shape, op);
    } finally {
      t.dispose();
    }
  };
  return {
    name: 'head',
    params: [gain, bias, out],
    async run(x: Tensor) {
      const [rows, t] = x.shape as number[];
      const positions = rows * t;
      const h = tf.tidy(() => tf.reshape(layerNorm(tf, x, gain, bias), [positions, dim]));
      let output: Tensor;
      let probs: Tensor;
      // The forward's intermediates, freed however it ends.
      const temps: Tensor[] = [];
      const temp = <T extends Tensor>(tensor: T): T => {
        temps.push(tensor);
        return tensor;
      };
      try {
        const z = temp(tf.tidy(() => matMul(tf, h, out)));
        const max = temp(await across(tf.max(z, 1, true), 'max'));
        const shifted = temp(tf.tidy(() => tf.sub(z, max)));
        const sums = temp(
          await across(
            tf.tidy(() => tf.sum(tf.exp(shifted), 1, true)),
            'sum',
          ),
        );
        const logProbs = temp(tf.tidy(() => tf.sub(shifted, tf.log(sums))));
        probs = tf.tidy(() => tf.exp(logProbs));
        output = tf.tidy(() => tf.reshape(logProbs, [rows, t, share]));
      } catch (err) {
        h.dispose();
        throw err;
      } finally {
        for (const tensor of temps) tensor.dispose();
      }
      const release = () => {
        h.dispose();
        probs.dispose();
      };
      return {
        output,
        async backward(dy: Tensor, wantDx: boolean) {
          try {
            const flatDy = tf.tidy(() => tf.reshape(dy, [positions, share]));
            let dz: Tensor;
            try {
              const total = await across(tf.sum(flatDy, 1, true), 'sum');
              dz = tf.tidy(() => tf.sub(flatDy, tf.mul(probs, total)));
              total.dispose();
            } finally {
              flatDy.dispose();
            }
            const dOut = tf.tidy(() => tf.matMul(tf.transpose(h), dz));
            const dhShare = tf.tidy(() => tf.matMul(dz, tf.transpose(out)));
            dz.dispose();
            let dh: Tensor;
            try {
              dh = await reducedOver(tf, comm, dhShare, callOptions, [rows, t, dim]);
            } finally {
              dhShare.dispose();
            }
            const [dx, dGain, dBias] = tf.tidy(() =>
              tf.grads((xx: Tensor, g: Tensor, b: Tensor) => layerNorm(tf, xx, g, b))([x, gain, bias], dh),
            );
            dh.dispose();
            if (!wantDx) dx.dispose();
            return { dx: wantDx ? dx : undefined, grads: [dGain, dBias, dOut] };
          } finally {
            release();
          }
        },
        release,
      };
    },
  };
}

/**
 * The mean cross-entropy of this rank's share of the vocabulary, from vocabParallelHead's
 * log-probabilities: each position's target is in one rank's share (the others' one-hot rows are
 * zero), so the group's losses sum to the whole loss, and each rank's gradient is its share of
 * the whole one's. `reduceLoss` sums a loss value over the group, for reporting.
 */
export function vocabParallelLoss(
  tf: Tf,
  comm: TensorParallelComm,
  share: number,
  callOptions: CallOptions = {},
): {
  loss(logProbs: Tensor, targets: Tensor): Tensor;
  reduceLoss(loss: number, options?: CallOptions): Promise<number>;
} {
  const first = comm.rank * share;
  return {
    loss(logProbs, targets) {
      const positions = targets.size;
      const local = oneHotInRange(tf, targets, first, share);
      return tf.div(tf.neg(tf.sum(tf.mul(local, tf.reshape(logProbs, [positions, share])))), positions);
    },
    async reduceLoss(loss, options = {}) {
      const value = new Float32Array([loss]);
      await comm.allReduce(value, { ...callOptions, ...options, op: 'sum' });
      return value[0];
    },
  };
}
