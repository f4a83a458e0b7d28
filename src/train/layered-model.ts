import type { Tensor, Variable } from '@tensorflow/tfjs';
import type { CallOptions } from '../comm/call-options.js';
import type { Tf } from './load-tf.js';

/**
 * One stage of a model's forward pass with the parameters it owns. Backward runs layer by layer
 * (a vector-Jacobian product per layer), so a layer's gradients exist, and can be sent, while
 * the layers before it are still running backward.
 */
export interface ModelLayer {
  readonly name: string;
  readonly params: readonly Variable[];
  /** The layer's output; `input` is the previous layer's output (for the first layer, the batch's inputs). */
  forward(input: Tensor, params: readonly Tensor[]): Tensor;
}

/** A layer's backward: the gradient of its input (when asked for) and of each of its parameters, in order. */
export interface LayerGradients {
  readonly dx: Tensor | undefined;
  readonly grads: readonly Tensor[];
}

/** A layer that has run forward: its output, and its backward with what it kept for it. */
export interface Forwarded {
  readonly output: Tensor;
  backward(dy: Tensor, wantDx: boolean): Promise<LayerGradients>;
  /** Frees what forward kept, where backward will not run (a failed step). */
  release(): void;
}

/**
 * A layer whose forward or backward communicates (a tensor-parallel block's all-reduces), so it
 * cannot be one synchronous TensorFlow.js function: it keeps what backward needs itself.
 */
export interface CommLayer {
  readonly name: string;
  readonly params: readonly Variable[];
  run(input: Tensor): Promise<Forwarded>;
}

export type Layer = ModelLayer | CommLayer;

/** A model as a chain of layers and a loss on the last layer's output. */
export interface LayeredModel {
  /** The TensorFlow.js the model's tensors belong to. */
  readonly tf: Tf;
  readonly layers: readonly Layer[];
  /** A transformer's shape, for the simulator (`modelSpec`): its blocks, width and sequence length. */
  readonly shape?: { readonly blocks: number; readonly hidden: number; readonly sequence: number };
  /** The mean loss of the last layer's output against the targets, a scalar. */
  loss(output: Tensor, targets: Tensor): Tensor;
  /**
   * Where `loss` is a share of the whole (a loss computed in parallel over a tensor-parallel
   * group), the whole loss from this rank's value: every rank of the group calls it alike.
   */
  reduceLoss?(loss: number, options?: CallOptions): Promise<number>;
}

/** Every parameter of the model, in layer order. */
export function modelParams(model: LayeredModel): Variable[] {
  return model.layers.flatMap((layer) => layer.params);
}

/** How many numbers the model trains. */
export function parameterCount(model: LayeredModel): number {
  return modelParams(model).reduce((n, p) => n + p.size, 0);
}
