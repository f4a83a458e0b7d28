import type { Tensor, Variable } from '@tensorflow/tfjs';
import type { CallOptions } from '../comm/call-options.js';
import { layerNorm, matMul } from './gpt-ops.js';
import type { CommLayer } from './layered-model.js';
import type { Tf } from './load-tf.js';
import { type TensorParallelComm, summedOver } from './tensor-parallel.js';

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
      const local = tf.tidy(() =>
        tf.oneHot(tf.sub(tf.reshape(ids, [rows * t]), tf.scalar(first, 'int32')), share).toFloat(),
      );
      let looked: Tensor;
      try {
        const partial = tf.tidy(() => matMul(tf, local, tokens));
        try {
          looked = await summedOver(tf, comm, partial, callOptions);
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
 * The output layer split over a tensor-parallel group by vocabulary columns (a column-parallel
 * projection whose output is gathered, Megatron-LM's gather_output): each rank computes the
 * logits of its share of the vocabulary and all-gathers them, so the loss sees every logit on
 * every rank. Backward takes the rank's columns of the logits' gradient and all-reduces the
 * gradient of the normed input (Megatron's f), so the layer norm's gradients and the gradient
 * passed down are equal on every rank.
 */
export function vocabParallelHead(
  tf: Tf,
  comm: TensorParallelComm,
  parts: { gain: Variable; bias: Variable; out: Variable },
  callOptions: CallOptions = {},
): CommLayer {
  const { gain, bias, out } = parts;
  const [dim, share] = out.shape as number[];
  const vocab = share * comm.size;
  return {
    name: 'head',
    params: [gain, bias, out],
    async run(x: Tensor) {
      const [rows, t] = x.shape as number[];
      const h = tf.tidy(() => tf.reshape(layerNorm(tf, x, gain, bias), [rows * t, dim]));
      let logits: Tensor;
      try {
        const local = tf.tidy(() => matMul(tf, h, out));
        const mine = local.dataSync() as Float32Array;
        local.dispose();
        const gathered = new Float32Array(mine.length * comm.size);
        await comm.allGather(mine, { ...callOptions, output: gathered });
        // Rank-major blocks [size][rows * t][share] to the vocabulary's order [rows * t][size * share].
        logits = tf.tidy(() =>
          tf.reshape(tf.transpose(tf.tensor(gathered, [comm.size, rows * t, share], 'float32'), [1, 0, 2]), [
            rows,
            t,
            vocab,
          ]),
        );
      } catch (err) {
        h.dispose();
        throw err;
      }
      return {
        output: logits,
        async backward(dy: Tensor, wantDx: boolean) {
          try {
            const mineDy = tf.tidy(() =>
              tf.slice(tf.reshape(dy, [rows * t, vocab]), [0, comm.rank * share], [-1, share]),
            );
            const dOut = tf.tidy(() => tf.matMul(tf.transpose(h), mineDy));
            const dhShare = tf.tidy(() => tf.matMul(mineDy, tf.transpose(out)));
            mineDy.dispose();
            let dh: Tensor;
            try {
              dh = await summedOver(tf, comm, dhShare, callOptions, [rows, t, dim]);
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
            h.dispose();
          }
        },
        release() {
          h.dispose();
        },
      };
    },
  };
}
