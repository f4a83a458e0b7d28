import type { Tensor, Variable } from '@tensorflow/tfjs';
import type { CallOptions, ReduceOptions } from '../comm/call-options.js';
import type { TypedArray } from '../dtypes/dtype.js';
import { layerNorm } from './gpt-ops.js';
import type { CommLayer, Forwarded } from './layered-model.js';
import type { Tf } from './load-tf.js';

/** What a tensor-parallel layer needs of its group's communicator. */
export interface TensorParallelComm {
  readonly rank: number;
  readonly size: number;
  allReduce(buffer: TypedArray, options?: ReduceOptions): Promise<void>;
}

/**
 * A tensor reduced over the group's ranks by `op` (a sum by default): a new tensor of `shape`,
 * the tensor's own by default; the tensor is left as it is.
 */
export async function reducedOver(
  tf: Tf,
  comm: TensorParallelComm,
  t: Tensor,
  callOptions: CallOptions,
  shape: number[] = t.shape,
  op: 'sum' | 'max' = 'sum',
): Promise<Tensor> {
  const data = t.dataSync() as Float32Array;
  await comm.allReduce(data, { ...callOptions, op });
  return tf.tensor(data, shape, 'float32');
}

/** Columns [rank/size of each of `parts` equal blocks] of a 2-D weight or a bias: a column-parallel share (Megatron-LM). */
export function columnShare(tf: Tf, w: Tensor, rank: number, size: number, parts = 1): Tensor {
  const columns = w.shape[w.rank - 1] as number;
  const block = columns / parts;
  const share = block / size;
  return tf.tidy(() =>
    tf.concat(
      Array.from({ length: parts }, (_, part) =>
        w.rank === 1
          ? tf.slice(w, part * block + rank * share, share)
          : tf.slice(w, [0, part * block + rank * share], [-1, share]),
      ),
      w.rank - 1,
    ),
  );
}

/** Rows [rank/size] of a 2-D weight: a row-parallel share. */
export function rowShare(tf: Tf, w: Tensor, rank: number, size: number): Tensor {
  const share = (w.shape[0] as number) / size;
  return tf.tidy(() => tf.slice(w, [rank * share, 0], [share, -1]));
}

/**
 * A residual branch split over a tensor-parallel group as Megatron-LM splits attention and
 * MLP: y = x + allReduce(core(LN(x), share)) + outBias. Each rank holds the layer norm and the
 * output bias whole and a column-then-row share of the core's weights; forward all-reduces the
 * core's partial outputs (Megatron's g), backward all-reduces the gradient of the layer norm's
 * output (Megatron's f), so the layer norm's and the bias's gradients are equal on every rank.
 */
export function tensorParallelResidual(
  tf: Tf,
  comm: TensorParallelComm,
  name: string,
  parts: { gain: Variable; bias: Variable; share: readonly Variable[]; outBias: Variable },
  core: (h: Tensor, share: readonly Tensor[]) => Tensor,
  callOptions: CallOptions = {},
): CommLayer {
  const { gain, bias, share, outBias } = parts;
  const sum = (t: Tensor) => reducedOver(tf, comm, t, callOptions);
  return {
    name,
    params: [gain, bias, ...share, outBias],
    async run(x: Tensor): Promise<Forwarded> {
      const h = tf.tidy(() => layerNorm(tf, x, gain, bias));
      const partial = tf.tidy(() => core(h, share));
      let reduced: Tensor;
      try {
        reduced = await sum(partial);
      } catch (err) {
        h.dispose();
        throw err;
      } finally {
        partial.dispose();
      }
      const output = tf.tidy(() => tf.add(x, tf.add(reduced, outBias)));
      reduced.dispose();
      return {
        output,
        async backward(dy, wantDx) {
          try {
            const width = outBias.shape[0] as number;
            const dOutBias = tf.tidy(() => tf.sum(tf.reshape(dy, [-1, width]), 0));
            const [dhShare, ...dShare] = tf.tidy(() =>
              tf.grads((hh: Tensor, ...p: Tensor[]) => core(hh, p))([h, ...share], dy),
            );
            let dh: Tensor;
            try {
              dh = await sum(dhShare);
            } finally {
              dhShare.dispose();
            }
            const [dxNorm, dGain, dBias] = tf.tidy(() =>
              tf.grads((xx: Tensor, g: Tensor, b: Tensor) => layerNorm(tf, xx, g, b))([x, gain, bias], dh),
            );
            dh.dispose();
            const dx = wantDx ? tf.add(dy, dxNorm) : undefined;
            dxNorm.dispose();
            return { dx, grads: [dGain, dBias, ...dShare, dOutBias] };
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
