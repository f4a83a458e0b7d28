import { invalidArgument } from '../errors.js';

/** The element types collectives move and reduce. */
export const DTYPE_NAMES = [
  'float32',
  'float64',
  'int8',
  'uint8',
  'int32',
  'uint32',
  'int64',
  'uint64',
  'float16',
  'bfloat16',
  'float8e4m3',
  'float8e5m2',
] as const;
export type DType = (typeof DTYPE_NAMES)[number];

export type TypedArray =
  | Float32Array
  | Float64Array
  | Int8Array
  | Uint8Array
  | Int32Array
  | Uint32Array
  | BigInt64Array
  | BigUint64Array
  | Uint16Array;

/** The typed array that holds each dtype (16- and 8-bit floats as raw bits). */
export interface DTypeArrayMap {
  float32: Float32Array;
  float64: Float64Array;
  int8: Int8Array;
  uint8: Uint8Array;
  int32: Int32Array;
  uint32: Uint32Array;
  int64: BigInt64Array;
  uint64: BigUint64Array;
  float16: Uint16Array;
  bfloat16: Uint16Array;
  float8e4m3: Uint8Array;
  float8e5m2: Uint8Array;
}

type TypedArrayConstructor = {
  new (buffer: ArrayBufferLike, byteOffset?: number, length?: number): TypedArray;
  new (length: number): TypedArray;
  readonly BYTES_PER_ELEMENT: number;
};

export interface DTypeInfo {
  readonly name: DType;
  readonly bytes: number;
  readonly ctor: TypedArrayConstructor;
  readonly isFloat: boolean;
  readonly isBigInt: boolean;
  /** nccl-tests' type names, for the bench table. */
  readonly shortName: string;
}

const info = (name: DType, ctor: TypedArrayConstructor, isFloat: boolean, shortName: string): DTypeInfo => ({
  name,
  bytes: ctor.BYTES_PER_ELEMENT,
  ctor,
  isFloat,
  isBigInt: ctor === BigInt64Array || ctor === BigUint64Array,
  shortName,
});

const TABLE: Record<DType, DTypeInfo> = {
  float32: info('float32', Float32Array, true, 'float'),
  float64: info('float64', Float64Array, true, 'double'),
  int8: info('int8', Int8Array, false, 'int8'),
  uint8: info('uint8', Uint8Array, false, 'uint8'),
  int32: info('int32', Int32Array, false, 'int32'),
  uint32: info('uint32', Uint32Array, false, 'uint32'),
  int64: info('int64', BigInt64Array, false, 'int64'),
  uint64: info('uint64', BigUint64Array, false, 'uint64'),
  float16: info('float16', Uint16Array, true, 'half'),
  bfloat16: info('bfloat16', Uint16Array, true, 'bfloat16'),
  float8e4m3: info('float8e4m3', Uint8Array, true, 'fp8_e4m3'),
  float8e5m2: info('float8e5m2', Uint8Array, true, 'fp8_e5m2'),
};

const ALIASES: Record<string, DType> = {
  float: 'float32',
  double: 'float64',
  half: 'float16',
  bf16: 'bfloat16',
  fp16: 'float16',
  fp32: 'float32',
  fp64: 'float64',
  int: 'int32',
  uint: 'uint32',
  char: 'int8',
  fp8_e4m3: 'float8e4m3',
  fp8_e5m2: 'float8e5m2',
  float8_e4m3fn: 'float8e4m3',
  float8_e5m2: 'float8e5m2',
};

export function isDType(name: unknown): name is DType {
  return typeof name === 'string' && Object.hasOwn(TABLE, name);
}

/** Accepts tsccl names and nccl-tests names (float, double, half, bfloat16, ...). */
export function dtypeInfo(name: string, argument = 'dtype'): DTypeInfo {
  const resolved = isDType(name) ? name : ALIASES[name];
  if (resolved === undefined) {
    throw invalidArgument(`Unknown ${argument} '${name}': expected one of ${DTYPE_NAMES.join(', ')}`, { argument });
  }
  return TABLE[resolved];
}

/**
 * The dtype of an array whose class only one dtype uses (a Float32Array is float32), undefined
 * for the classes dtypes share (Uint16Array: float16 or bfloat16; Uint8Array: uint8 or float8).
 */
export function soleDType(array: TypedArray): DTypeInfo | undefined {
  if (array instanceof Float32Array) return TABLE.float32;
  if (array instanceof Float64Array) return TABLE.float64;
  if (array instanceof Int32Array) return TABLE.int32;
  if (array instanceof Uint32Array) return TABLE.uint32;
  if (array instanceof Int8Array) return TABLE.int8;
  if (array instanceof BigInt64Array) return TABLE.int64;
  if (array instanceof BigUint64Array) return TABLE.uint64;
  return undefined;
}

/**
 * The dtype a typed array holds when the caller did not say: Uint16Array is ambiguous between
 * float16 and bfloat16 and needs an explicit dtype; a Uint8Array is uint8 unless the call says
 * float8e4m3 or float8e5m2 (or the array came from comm.alloc).
 */
export function inferDType(array: TypedArray, argument: string): DType {
  const sole = soleDType(array);
  if (sole !== undefined) return sole.name;
  if (array instanceof Uint8Array) return 'uint8';
  if (array instanceof Uint16Array) {
    throw invalidArgument(`${argument} is a Uint16Array: pass { dtype: 'float16' } or { dtype: 'bfloat16' }`, {
      argument,
    });
  }
  throw invalidArgument(`${argument} must be a typed array (Float32Array, Int32Array, ...)`, { argument });
}

export function isTypedArray(value: unknown): value is TypedArray {
  return ArrayBuffer.isView(value) && !(value instanceof DataView);
}
