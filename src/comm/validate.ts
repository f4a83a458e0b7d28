import { type DTypeInfo, type TypedArray, dtypeInfo, inferDType, isTypedArray } from '../dtypes/dtype.js';
import { ErrorCode, TscclError, invalidArgument } from '../errors.js';

/** Remembers the dtype of arrays from comm.alloc, so float16 and bfloat16 need no repeated hint. */
export const allocatedDTypes = new WeakMap<ArrayBufferView, DTypeInfo>();

export function checkTypedArray(value: unknown, argument: string, rank: number): TypedArray {
  if (!isTypedArray(value)) {
    throw invalidArgument(`Rank ${rank}: ${argument} must be a typed array (Float32Array, Int32Array, ...), got ${describe(value)}`, { rank, argument });
  }
  return value as TypedArray;
}

/** The dtype of a call: the explicit option if given (checked against the array), else the array's own. */
export function resolveDType(buffer: TypedArray, dtype: string | undefined, argument: string, rank: number): DTypeInfo {
  if (dtype !== undefined) {
    const info = dtypeInfo(dtype);
    if (!(buffer instanceof info.ctor)) {
      throw invalidArgument(`Rank ${rank}: ${argument} is a ${buffer.constructor.name} but dtype is ${info.name} (needs ${info.ctor.name})`, { rank, argument });
    }
    return info;
  }
  return allocatedDTypes.get(buffer) ?? dtypeInfo(inferDType(buffer, argument));
}

export function checkSameType(buffer: TypedArray, dtype: DTypeInfo, argument: string, rank: number): void {
  if (!(buffer instanceof dtype.ctor)) {
    throw invalidArgument(`Rank ${rank}: ${argument} is a ${buffer.constructor.name} but the call's dtype is ${dtype.name} (needs ${dtype.ctor.name})`, { rank, argument });
  }
}

export function checkLength(buffer: TypedArray, needed: number, argument: string, rank: number, what: string): void {
  if (buffer.length < needed) {
    throw invalidArgument(`Rank ${rank}: ${argument} holds ${buffer.length} elements but ${what} needs ${needed}`, { rank, argument, needed, got: buffer.length });
  }
}

export function checkRank(value: unknown, size: number, argument: string, rank: number): number {
  if (!Number.isInteger(value) || (value as number) < 0 || (value as number) >= size) {
    throw invalidArgument(`Rank ${rank}: ${argument} ${describe(value)} is out of range: expected an integer in [0, ${size - 1}]`, { rank, argument });
  }
  return value as number;
}

export function checkCounts(value: unknown, size: number, argument: string, rank: number): number[] {
  if (!Array.isArray(value) || value.length !== size || value.some((c) => !Number.isInteger(c) || c < 0)) {
    throw invalidArgument(`Rank ${rank}: ${argument} must be an array of ${size} non-negative integers, got ${describe(value)}`, { rank, argument });
  }
  return value as number[];
}

export interface CallOptions {
  /** Ends the call with TSCCL_ERR_TIMEOUT after this many ms (default TSCCL_TIMEOUT_MS). */
  timeoutMs?: number;
  /** Ends the call with TSCCL_ERR_ABORTED when aborted. */
  signal?: AbortSignal;
  /** CRC32 every message of this call end to end (default from TSCCL_CHECKSUM). */
  checksum?: boolean;
}

export function checkCallOptions(options: CallOptions, defaultTimeoutMs: number, rank: number): { timeoutMs: number; signal: AbortSignal | undefined; checksum: boolean | undefined } {
  if (typeof options !== 'object' || options === null) {
    throw invalidArgument(`Rank ${rank}: options must be an object, got ${describe(options)}`, { rank, argument: 'options' });
  }
  const timeoutMs = options.timeoutMs ?? defaultTimeoutMs;
  if (typeof timeoutMs !== 'number' || !(timeoutMs > 0)) {
    throw invalidArgument(`Rank ${rank}: timeoutMs must be a positive number of ms, got ${describe(options.timeoutMs)}`, { rank, argument: 'timeoutMs' });
  }
  const signal = options.signal;
  if (signal !== undefined && !(signal instanceof AbortSignal)) {
    throw invalidArgument(`Rank ${rank}: signal must be an AbortSignal`, { rank, argument: 'signal' });
  }
  if (signal?.aborted) {
    throw new TscclError(ErrorCode.ABORTED, `Rank ${rank}: the call's signal was already aborted: ${String(signal.reason)}`, { rank, argument: 'signal' });
  }
  if (options.checksum !== undefined && typeof options.checksum !== 'boolean') {
    throw invalidArgument(`Rank ${rank}: checksum must be true or false, got ${describe(options.checksum)}`, { rank, argument: 'checksum' });
  }
  return { timeoutMs, signal, checksum: options.checksum };
}

function describe(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return `[${value.slice(0, 8).join(', ')}${value.length > 8 ? ', ...' : ''}]`;
  if (typeof value === 'object') return (value as object).constructor?.name ?? 'object';
  return typeof value === 'string' ? `'${value}'` : String(value);
}
