import type { Tensor } from '@tensorflow/tfjs';
import type { CommLayer, Forwarded, Layer } from './layered-model.js';
import type { Tf } from './load-tf.js';

export function isCommLayer(layer: Layer): layer is CommLayer {
  return 'run' in layer;
}

/**
 * Runs one layer forward. A synchronous layer keeps only its input: its backward runs its
 * forward again under `tf.grads` (a vector-Jacobian product with the upstream gradient), which
 * costs one more forward per layer but keeps no intermediate tensors (as activation
 * checkpointing does).
 */
export async function forwardLayer(tf: Tf, layer: Layer, input: Tensor): Promise<Forwarded> {
  if (isCommLayer(layer)) return layer.run(input);
  const output = tf.tidy(() => layer.forward(input, layer.params));
  return {
    output,
    async backward(dy, wantDx) {
      const params = [...layer.params];
      if (!wantDx)
        return {
          dx: undefined,
          grads: tf.tidy(() => tf.grads((...p: Tensor[]) => layer.forward(input, p))(params, dy)),
        };
      const [dx, ...grads] = tf.tidy(() =>
        tf.grads((x: Tensor, ...p: Tensor[]) => layer.forward(x, p))([input, ...params], dy),
      );
      return { dx, grads };
    },
    release() {},
  };
}
