import { writeFile } from 'node:fs/promises';
import { invalidArgument } from '../errors.js';
import type { ModelSpec } from '../sim/training.js';
import type { LayeredModel } from './layered-model.js';

/**
 * The shape `tsccl sim train --model-file` reads, of a model that trains here: its blocks, width,
 * sequence length and the parameters of the whole model (under tensor parallelism, this rank's
 * share times the group's size is not the whole: pass a model built without it).
 */
export function modelSpec(model: LayeredModel, name = 'tsccl-train-model'): ModelSpec {
  if (model.shape === undefined) {
    throw invalidArgument('modelSpec: the model has no shape (createGpt gives one; set model.shape for your own)', {
      argument: 'model',
    });
  }
  const parameters = model.layers.reduce((n, layer) => n + layer.params.reduce((m, p) => m + p.size, 0), 0);
  const { blocks, hidden, sequence } = model.shape;
  return { name, layers: blocks, hidden, sequence, parameters, experts: 0, topK: 0, activeParameters: parameters };
}

/** Writes `modelSpec(model, name)` as JSON to `path`. */
export async function writeModelSpec(model: LayeredModel, path: string, name?: string): Promise<void> {
  await writeFile(path, `${JSON.stringify(modelSpec(model, name), null, 2)}\n`);
}
