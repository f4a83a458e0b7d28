import type { DTypeInfo, TypedArray } from '../dtypes/dtype.js';
import { bfloat16ToFloat, halfToFloat } from '../dtypes/half.js';

/** What a shadowed compressed call measured: its result against the exact one, on this rank. */
export interface CompressionReport {
  readonly seq: number;
  readonly op: string;
  /** The wire format, as flight records name it (int8/256). */
  readonly compression: string;
  readonly elements: number;
  /** The largest |compressed - exact| over the finite results. */
  readonly maxAbsError: number;
  /** maxAbsError over the largest finite |exact| (0 where every exact value is 0). */
  readonly relativeError: number;
  /** Elements where one result is finite and the other is not (Inf carried as NaN, overflow). */
  readonly nonFinite: number;
}

/** How far `got` is from `exact` (both in the call's dtype). */
export function compareResults(
  dtype: DTypeInfo,
  got: TypedArray,
  exact: TypedArray,
): Pick<CompressionReport, 'elements' | 'maxAbsError' | 'relativeError' | 'nonFinite'> {
  const read =
    dtype.name === 'float16'
      ? (a: TypedArray, i: number) => halfToFloat(a[i] as number)
      : dtype.name === 'bfloat16'
        ? (a: TypedArray, i: number) => bfloat16ToFloat(a[i] as number)
        : (a: TypedArray, i: number) => a[i] as number;
  let maxAbsError = 0;
  let peak = 0;
  let nonFinite = 0;
  for (let i = 0; i < exact.length; i++) {
    const e = read(exact, i);
    const g = read(got, i);
    if (Number.isFinite(e) !== Number.isFinite(g)) nonFinite++;
    else if (Number.isFinite(e)) {
      maxAbsError = Math.max(maxAbsError, Math.abs(g - e));
      peak = Math.max(peak, Math.abs(e));
    }
  }
  return { elements: exact.length, maxAbsError, relativeError: peak > 0 ? maxAbsError / peak : 0, nonFinite };
}
