import { invalidArgument } from '../errors.js';
import type { DTypeInfo } from '../dtypes/dtype.js';

export const REDUCE_OPS = ['sum', 'prod', 'min', 'max', 'avg'] as const;
export type ReduceOp = (typeof REDUCE_OPS)[number];

export function parseReduceOp(value: unknown, argument = 'op'): ReduceOp {
  if (typeof value === 'string' && (REDUCE_OPS as readonly string[]).includes(value)) return value as ReduceOp;
  throw invalidArgument(`Unknown ${argument} '${String(value)}': expected one of ${REDUCE_OPS.join(', ')}`, {
    argument,
  });
}

/** avg is defined for floating types only, as in NCCL: an integer mean would silently truncate. */
export function checkOpForType(op: ReduceOp, dtype: DTypeInfo, argument = 'op'): void {
  if (op === 'avg' && !dtype.isFloat) {
    throw invalidArgument(`${argument} 'avg' needs a floating dtype, got ${dtype.name}`, { argument });
  }
}
