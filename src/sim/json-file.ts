import { readFileSync } from 'node:fs';
import type { z } from 'zod';
import { invalidArgument } from '../errors.js';

/**
 * A JSON file a CLI option names, checked against `schema`: a file that cannot be read or parsed,
 * or that does not fit, is TSCCL_ERR_INVALID_ARGUMENT naming the option, the path and the first
 * field that does not fit (then `expected`, what the file should have been).
 */
export function readJsonFile<S extends z.ZodTypeAny>(
  path: string,
  schema: S,
  argument: string,
  expected?: string,
): z.output<S> {
  let json: unknown;
  try {
    json = JSON.parse(readFileSync(path, 'utf8'));
  } catch (err) {
    throw invalidArgument(`${argument} ${path}: ${(err as Error).message}`, { argument });
  }
  const parsed = schema.safeParse(json);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    throw invalidArgument(
      `${argument} ${path}: ${issue.path.join('.') || 'the file'}: ${issue.message}${expected === undefined ? '' : ` (expected ${expected})`}`,
      { argument },
    );
  }
  return parsed.data;
}
