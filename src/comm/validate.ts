import { type DTypeInfo, type TypedArray, dtypeInfo, inferDType, isTypedArray, soleDType } from '../dtypes/dtype.js';
import type { CallShape } from '../algorithms/schedule.js';
import { invalidArgument } from '../errors.js';

/** Remembers the dtype of arrays from comm.alloc, so float16 and bfloat16 need no repeated hint. */
export const allocatedDTypes = new WeakMap<ArrayBufferView, DTypeInfo>();

export function checkTypedArray(value: unknown, argument: string, rank: number): TypedArray {
  if (!isTypedArray(value)) {
    throw invalidArgument(
      `Rank ${rank}: ${argument} must be a typed array (Float32Array, Int32Array, ...), got ${describe(value)}`,
      { rank, argument },
    );
  }
  return value as TypedArray;
}

/** The dtype of a call: the explicit option if given (checked against the array), else the array's own. */
export function resolveDType(buffer: TypedArray, dtype: string | undefined, argument: string, rank: number): DTypeInfo {
  if (dtype !== undefined) {
    const info = dtypeInfo(dtype);
    if (!(buffer instanceof info.ctor)) {
      throw invalidArgument(
        `Rank ${rank}: ${argument} is a ${buffer.constructor.name} but dtype is ${info.name} (needs ${info.ctor.name})`,
        { rank, argument },
      );
    }
    return info;
  }
  // An array of a class one dtype owns needs no lookup: the commonest small call passes a Float32Array.
  return soleDType(buffer) ?? allocatedDTypes.get(buffer) ?? dtypeInfo(inferDType(buffer, argument));
}

export function checkSameType(buffer: TypedArray, dtype: DTypeInfo, argument: string, rank: number): void {
  if (!(buffer instanceof dtype.ctor)) {
    throw invalidArgument(
      `Rank ${rank}: ${argument} is a ${buffer.constructor.name} but the call's dtype is ${dtype.name} (needs ${dtype.ctor.name})`,
      { rank, argument },
    );
  }
}

/**
 * Throws unless `buffer` holds `needed` elements for the call of `shape`. The message is built
 * only when it fails: a string built per call was a tenth of the garbage of a small call on a
 * fresh array.
 */
export function checkLength(
  buffer: TypedArray,
  needed: number,
  argument: string,
  rank: number,
  shape: Pick<CallShape, 'collective' | 'count' | 'inPlace'>,
): void {
  if (buffer.length < needed) {
    const what = shape.inPlace
      ? `in-place ${shape.collective} of ${shape.count} elements per block`
      : `${shape.collective} of count ${shape.count}`;
    throw invalidArgument(`Rank ${rank}: ${argument} holds ${buffer.length} elements but ${what} needs ${needed}`, {
      rank,
      argument,
      needed,
      got: buffer.length,
    });
  }
}

export function checkRank(value: unknown, size: number, argument: string, rank: number): number {
  if (!Number.isInteger(value) || (value as number) < 0 || (value as number) >= size) {
    throw invalidArgument(
      `Rank ${rank}: ${argument} ${describe(value)} is out of range: expected an integer in [0, ${size - 1}]`,
      { rank, argument },
    );
  }
  return value as number;
}

export function checkCounts(value: unknown, size: number, argument: string, rank: number): number[] {
  if (!Array.isArray(value) || value.length !== size || value.some((c) => !Number.isInteger(c) || c < 0)) {
    throw invalidArgument(
      `Rank ${rank}: ${argument} must be an array of ${size} non-negative integers, got ${describe(value)}`,
      { rank, argument },
    );
  }
  return value as number[];
}

/** A value as an error message shows it. */
export function describe(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return `[${value.slice(0, 8).join(', ')}${value.length > 8 ? ', ...' : ''}]`;
  if (typeof value === 'object') return (value as object).constructor?.name ?? 'object';
  return typeof value === 'string' ? `'${value}'` : String(value);
}
