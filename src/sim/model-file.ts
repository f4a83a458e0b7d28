import { readFileSync } from 'node:fs';
import { z } from 'zod';
import { invalidArgument } from '../errors.js';
import type { ModelSpec } from './training.js';
import type { ReplaySpan } from './trace-replay.js';

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

const TRACE_FILE = z.object({
  traceEvents: z.array(
    z
      .object({
        ph: z.string(),
        name: z.string(),
        cat: z.string().optional(),
        pid: z.number(),
        ts: z.number().optional(),
        dur: z.number().optional(),
        args: z.record(z.string(), z.unknown()).optional(),
      })
      .passthrough(),
  ),
});

/** A measured run's Chrome trace (`tsccl sim train --trace`), as tsccl/train's writeTrace writes it. */
export function readTraceFile(path: string): { traceEvents: ReplaySpan[] } {
  let json: unknown;
  try {
    json = JSON.parse(readFileSync(path, 'utf8'));
  } catch (err) {
    throw invalidArgument(`--trace ${path}: ${(err as Error).message}`, { argument: '--trace' });
  }
  const parsed = TRACE_FILE.safeParse(json);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    throw invalidArgument(
      `--trace ${path}: ${issue.path.join('.') || 'the file'}: ${issue.message} (expected a Chrome trace that tsccl/train's writeTrace wrote)`,
      { argument: '--trace' },
    );
  }
  return parsed.data;
}
