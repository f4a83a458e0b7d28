import { type DType, type DTypeArrayMap, type TypedArray, dtypeInfo } from '../dtypes/dtype.js';
import { invalidArgument } from '../errors.js';
import type { Arena } from '../memory/arena.js';
import { allocatedDTypes, checkTypedArray } from './validate.js';

/**
 * `comm.alloc`: a typed array of `count` elements in the arena, its dtype remembered (so float16
 * and bfloat16 need no hint). Its memory returns on `freeArray`, or when the array is garbage
 * collected.
 */
export function allocArray<D extends DType>(arena: Arena, dtype: D, count: number, rank: number): DTypeArrayMap[D] {
  const info = dtypeInfo(dtype);
  if (!Number.isInteger(count) || count < 0) {
    throw invalidArgument(`Rank ${rank}: alloc count must be a non-negative integer, got ${count}`, {
      rank,
      argument: 'count',
    });
  }
  const array = arena.allocateOwned(info.ctor as never, count, info.bytes) as TypedArray;
  // Zeroed, as a new typed array is: the arena reuses what earlier calls and arrays left.
  new Uint8Array(array.buffer, array.byteOffset, array.byteLength).fill(0);
  allocatedDTypes.set(array, info);
  return array as DTypeArrayMap[D];
}

/** `comm.free`: returns an array from `allocArray` to the arena now. */
export function freeArray(arena: Arena, buffer: TypedArray, rank: number): void {
  checkTypedArray(buffer, 'buffer', rank);
  if (!arena.release(buffer)) {
    throw invalidArgument(
      `Rank ${rank}: free takes an array from alloc that was not freed yet; this one ${arena.contains(buffer) ? 'was freed already or is a view into one' : 'is not in the arena'}`,
      { rank, argument: 'buffer' },
    );
  }
}
