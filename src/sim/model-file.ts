import { z } from 'zod';
import { readJsonFile } from './json-file.js';
import type { ModelSpec } from './training.js';

const positive = z.number().positive();
const MODEL_FILE = z.object({
  name: z.string().min(1),
  layers: z.number().int().positive(),
  hidden: z.number().int().positive(),
  sequence: z.number().int().positive(),
  parameters: positive,
  experts: z.number().int().nonnegative().default(0),
  topK: z.number().int().nonnegative().default(0),
  activeParameters: positive.optional(),
});

/**
 * A model's shape from a JSON file (`tsccl sim train --model-file`), as tsccl/train's `modelSpec`
 * writes it for a model that really trained: { name, layers, hidden, sequence, parameters },
 * optionally experts, topK and activeParameters (a dense model's are 0, 0 and its parameters).
 */
export function readModelFile(path: string): ModelSpec {
  const m = readJsonFile(path, MODEL_FILE, '--model-file');
  return { ...m, activeParameters: m.activeParameters ?? m.parameters };
}
