/**
 * float16 and bfloat16 live as raw bits in Uint16Array (Float16Array does not exist on Node 20).
 * Decoding goes through a 64K-entry table; encoding rounds to nearest, ties to even, as IEEE
 * arithmetic on those types does, so reductions behave the same on every rank.
 */
const f32 = new Float32Array(1);
const u32 = new Uint32Array(f32.buffer);

let halfTable: Float32Array | undefined;

function buildHalfTable(): Float32Array {
  const table = new Float32Array(65536);
  for (let h = 0; h < 65536; h++) {
    const sign = h & 0x8000 ? -1 : 1;
    const exp = (h >> 10) & 0x1f;
    const frac = h & 0x3ff;
    if (exp === 0) table[h] = sign * frac * 2 ** -24;
    else if (exp === 31) table[h] = frac ? NaN : sign * Infinity;
    else table[h] = sign * (1 + frac / 1024) * 2 ** (exp - 15);
  }
  return table;
}

export function halfToFloat(bits: number): number {
  halfTable ??= buildHalfTable();
  return halfTable[bits & 0xffff];
}

/** The decode table itself, for kernels that convert whole arrays. */
export function halfDecodeTable(): Float32Array {
  halfTable ??= buildHalfTable();
  return halfTable;
}

export function floatToHalf(value: number): number {
  f32[0] = value;
  return halfFromFloatBits(u32[0]);
}

/** The float16 bits of the float32 whose bits are `x`: what whole-array encoders call. */
export function halfFromFloatBits(x: number): number {
  const sign = (x >>> 16) & 0x8000;
  const exp = (x >>> 23) & 0xff;
  let mant = x & 0x7fffff;
  if (exp === 0xff) return sign | 0x7c00 | (mant ? 0x200 : 0);
  const e = exp - 127 + 15;
  if (e >= 31) return sign | 0x7c00;
  if (e <= 0) {
    if (e < -10) return sign;
    mant |= 0x800000;
    const shift = 14 - e;
    const half = 1 << (shift - 1);
    const rest = mant & ((1 << shift) - 1);
    let out = mant >>> shift;
    if (rest > half || (rest === half && out & 1)) out++;
    return sign | out;
  }
  let out = (e << 10) | (mant >>> 13);
  const rest = mant & 0x1fff;
  if (rest > 0x1000 || (rest === 0x1000 && out & 1)) out++;
  // A carry out of the mantissa moves into the exponent, which is exactly the rounded value
  // (up to infinity at the top), so no special case is needed.
  return sign | out;
}

export function bfloat16ToFloat(bits: number): number {
  u32[0] = (bits & 0xffff) << 16;
  return f32[0];
}

export function floatToBfloat16(value: number): number {
  f32[0] = value;
  return bfloat16FromFloatBits(u32[0]);
}

/** The bfloat16 bits of the float32 whose bits are `x`. */
export function bfloat16FromFloatBits(x: number): number {
  if ((x & 0x7f800000) === 0x7f800000 && (x & 0x7fffff) !== 0) return ((x >>> 16) | 0x40) & 0xffff;
  return ((x + 0x7fff + ((x >>> 16) & 1)) >>> 16) & 0xffff;
}
