import { readFileSync } from 'node:fs';
import { z } from 'zod';
import { invalidArgument } from '../errors.js';
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
  let json: unknown;
  try {
    json = JSON.parse(readFileSync(path, 'utf8'));
  } catch (err) {
    throw invalidArgument(`--model-file ${path}: ${(err as Error).message}`, { argument: '--model-file' });
  }
  const parsed = MODEL_FILE.safeParse(json);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    throw invalidArgument(`--model-file ${path}: ${issue.path.join('.') || 'the file'}: ${issue.message}`, {
      argument: '--model-file',
    });
  }
  const m = parsed.data;
  return { ...m, activeParameters: m.activeParameters ?? m.parameters };
}
