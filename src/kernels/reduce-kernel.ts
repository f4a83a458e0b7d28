import type { DType, TypedArray } from '../dtypes/dtype.js';
import { type Float8Format, float8Encoder, float8Tables } from '../dtypes/float8.js';
import { bfloat16ToFloat, floatToBfloat16, floatToHalf, halfDecodeTable } from '../dtypes/half.js';
import type { ReduceOp } from './reduce-op.js';

/**
 * dst[i] = a[i] (op) b[i] for i < dst.length. dst may alias a or b. avg reduces as sum; the
 * caller divides once at the end (see scaleKernel), as NCCL does for floating types.
 *
 * Min and max propagate NaN (Math.min/Math.max), which keeps the operation commutative, so
 * every rank computes bitwise the same value whatever order an algorithm combines in.
 */
export type ReduceKernel = (dst: TypedArray, a: TypedArray, b: TypedArray) => void;

type Num = Float32Array | Float64Array | Int8Array | Uint8Array | Int32Array | Uint32Array;
type Big = BigInt64Array | BigUint64Array;

const numberKernels: Record<'sum' | 'prod' | 'min' | 'max', (d: Num, a: Num, b: Num) => void> = {
  sum: (d, a, b) => {
    for (let i = 0; i < d.length; i++) d[i] = a[i] + b[i];
  },
  prod: (d, a, b) => {
    for (let i = 0; i < d.length; i++) d[i] = a[i] * b[i];
  },
  min: (d, a, b) => {
    for (let i = 0; i < d.length; i++) d[i] = Math.min(a[i], b[i]);
  },
  max: (d, a, b) => {
    for (let i = 0; i < d.length; i++) d[i] = Math.max(a[i], b[i]);
  },
};

// A 32-bit product can need 64 bits; Math.imul keeps the low 32, which is the wrapped result.
const imulKernel = (d: Num, a: Num, b: Num): void => {
  for (let i = 0; i < d.length; i++) d[i] = Math.imul(a[i], b[i]);
};

const bigKernels: Record<'sum' | 'prod' | 'min' | 'max', (d: Big, a: Big, b: Big) => void> = {
  sum: (d, a, b) => {
    for (let i = 0; i < d.length; i++) d[i] = a[i] + b[i];
  },
  prod: (d, a, b) => {
    for (let i = 0; i < d.length; i++) d[i] = a[i] * b[i];
  },
  min: (d, a, b) => {
    // biome-ignore lint/complexity/useMathMinMax: Math.min and Math.max take no BigInt
    for (let i = 0; i < d.length; i++) d[i] = a[i] < b[i] ? a[i] : b[i];
  },
  max: (d, a, b) => {
    // biome-ignore lint/complexity/useMathMinMax: Math.min and Math.max take no BigInt
    for (let i = 0; i < d.length; i++) d[i] = a[i] > b[i] ? a[i] : b[i];
  },
};

const scalarOps: Record<'sum' | 'prod' | 'min' | 'max', (x: number, y: number) => number> = {
  sum: (x, y) => x + y,
  prod: (x, y) => x * y,
  min: Math.min,
  max: Math.max,
};

// Sums and products of two half or bfloat16 values are exact in float32 or close enough that
// rounding float32 -> 16 bits gives the correctly rounded 16-bit result (no double-rounding
// case exists for 11- or 8-bit significands), so computing through float32 is the type's arithmetic.
function halfKernel(op: 'sum' | 'prod' | 'min' | 'max'): ReduceKernel {
  const f = scalarOps[op];
  const table = halfDecodeTable();
  return (d, a, b) => {
    const dd = d as Uint16Array,
      aa = a as Uint16Array,
      bb = b as Uint16Array;
    for (let i = 0; i < dd.length; i++) dd[i] = floatToHalf(f(table[aa[i]], table[bb[i]]));
  };
}

function bfloat16Kernel(op: 'sum' | 'prod' | 'min' | 'max'): ReduceKernel {
  const f = scalarOps[op];
  return (d, a, b) => {
    const dd = d as Uint16Array,
      aa = a as Uint16Array,
      bb = b as Uint16Array;
    for (let i = 0; i < dd.length; i++) dd[i] = floatToBfloat16(f(bfloat16ToFloat(aa[i]), bfloat16ToFloat(bb[i])));
  };
}

// The operation in double precision, rounded once to fp8 (NCCL rounds fp8 the same way per hop).
function float8Kernel(format: Float8Format, op: 'sum' | 'prod' | 'min' | 'max'): ReduceKernel {
  const f = scalarOps[op];
  const encode = float8Encoder(format);
  return (d, a, b) => {
    const table = float8Tables(format).decode;
    const dd = d as Uint8Array,
      aa = a as Uint8Array,
      bb = b as Uint8Array;
    for (let i = 0; i < dd.length; i++) dd[i] = encode(f(table[aa[i]], table[bb[i]]));
  };
}

const cache = new Map<string, ReduceKernel>();

export function reduceKernel(dtype: DType, op: ReduceOp): ReduceKernel {
  const key = `${dtype}:${op}`;
  let kernel = cache.get(key);
  if (kernel === undefined) {
    kernel = buildKernel(dtype, op === 'avg' ? 'sum' : op);
    cache.set(key, kernel);
  }
  return kernel;
}

function buildKernel(dtype: DType, op: 'sum' | 'prod' | 'min' | 'max'): ReduceKernel {
  switch (dtype) {
    case 'float16':
      return halfKernel(op);
    case 'bfloat16':
      return bfloat16Kernel(op);
    case 'float8e4m3':
      return float8Kernel('e4m3', op);
    case 'float8e5m2':
      return float8Kernel('e5m2', op);
    case 'int64':
    case 'uint64':
      return bigKernels[op] as ReduceKernel;
    case 'int32':
    case 'uint32':
      return (op === 'prod' ? imulKernel : numberKernels[op]) as ReduceKernel;
    default:
      return numberKernels[op] as ReduceKernel;
  }
}

/** x[i] = x[i] / divisor, in the dtype's own rounding; finishes an avg reduction. */
export function scaleKernel(dtype: DType): (x: TypedArray, divisor: number) => void {
  switch (dtype) {
    case 'float16': {
      const table = halfDecodeTable();
      return (x, n) => {
        const h = x as Uint16Array;
        for (let i = 0; i < h.length; i++) h[i] = floatToHalf(table[h[i]] / n);
      };
    }
    case 'bfloat16':
      return (x, n) => {
        const h = x as Uint16Array;
        for (let i = 0; i < h.length; i++) h[i] = floatToBfloat16(bfloat16ToFloat(h[i]) / n);
      };
    case 'float8e4m3':
    case 'float8e5m2': {
      const format = dtype === 'float8e4m3' ? 'e4m3' : 'e5m2';
      const encode = float8Encoder(format);
      return (x, n) => {
        const table = float8Tables(format).decode;
        const h = x as Uint8Array;
        for (let i = 0; i < h.length; i++) h[i] = encode(table[h[i]] / n);
      };
    }
    // One loop per type: a loop that sees both array types runs about a quarter slower.
    case 'float32':
      return (x, n) => {
        const f = x as Float32Array;
        for (let i = 0; i < f.length; i++) f[i] = f[i] / n;
      };
    case 'float64':
      return (x, n) => {
        const f = x as Float64Array;
        for (let i = 0; i < f.length; i++) f[i] = f[i] / n;
      };
    default:
      throw new Error(`scaleKernel: ${dtype} is not a floating type`);
  }
}
