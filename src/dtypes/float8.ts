/**
 * OCP 8-bit floats (OFP8, "OCP 8-bit Floating Point Specification" 1.0), as raw bits in a
 * Uint8Array:
 * - E4M3: bias 7, no infinities, NaN is S.1111.111, largest finite ±448, subnormals down to 2^-9;
 * - E5M2: IEEE-like, bias 15, ±Inf and NaNs, largest finite ±57344, subnormals down to 2^-16.
 * Encoding rounds to nearest, ties to even, and saturates: a finite value beyond the largest
 * finite becomes it (the spec's saturating mode), so a reduction never turns a large sum into
 * NaN. Infinity saturates in E4M3, which has none, and stays infinite in E5M2; NaN stays NaN.
 */
export type Float8Format = 'e4m3' | 'e5m2';

interface Float8Layout {
  readonly mantissaBits: number;
  readonly bias: number;
  /** Largest finite magnitude's code (sign bit clear). */
  readonly maxCode: number;
  readonly maxFinite: number;
  readonly nanCode: number;
  readonly infCode: number | undefined;
}

const LAYOUTS: Record<Float8Format, Float8Layout> = {
  e4m3: { mantissaBits: 3, bias: 7, maxCode: 0x7e, maxFinite: 448, nanCode: 0x7f, infCode: undefined },
  e5m2: { mantissaBits: 2, bias: 15, maxCode: 0x7b, maxFinite: 57344, nanCode: 0x7e, infCode: 0x7c },
};

/** The largest finite magnitude of a format. */
export function float8Max(format: Float8Format): number {
  return LAYOUTS[format].maxFinite;
}

/** The value of an 8-bit code. */
function decodeSlow(format: Float8Format, code: number): number {
  const { mantissaBits, bias, nanCode, infCode } = LAYOUTS[format];
  const sign = code & 0x80 ? -1 : 1;
  const magnitude = code & 0x7f;
  if (magnitude === nanCode || (infCode !== undefined && magnitude > infCode)) return Number.NaN;
  if (magnitude === infCode) return sign * Number.POSITIVE_INFINITY;
  const exponent = magnitude >> mantissaBits;
  const mantissa = magnitude & ((1 << mantissaBits) - 1);
  if (exponent === 0) return sign * mantissa * 2 ** (1 - bias - mantissaBits);
  return sign * (1 + mantissa / (1 << mantissaBits)) * 2 ** (exponent - bias);
}

/** The code of `value`, rounded to nearest even and saturated (see the file's comment). */
function encodeSlow(format: Float8Format, value: number): number {
  const { mantissaBits, bias, maxCode, maxFinite, nanCode, infCode } = LAYOUTS[format];
  if (Number.isNaN(value)) return nanCode;
  const sign = value < 0 || Object.is(value, -0) ? 0x80 : 0;
  const magnitude = Math.abs(value);
  if (magnitude === Number.POSITIVE_INFINITY) return sign | (infCode ?? maxCode);
  if (magnitude >= maxFinite) return sign | maxCode;
  if (magnitude === 0) return sign;
  const minExponent = 1 - bias;
  let exponent = Math.floor(Math.log2(magnitude));
  if (2 ** exponent > magnitude) exponent--;
  if (2 ** (exponent + 1) <= magnitude) exponent++;
  exponent = Math.max(exponent, minExponent);
  // magnitude in units of the last mantissa place at this exponent: exact (a power-of-two scale).
  const units = magnitude * 2 ** (mantissaBits - exponent);
  let rounded = Math.floor(units);
  const rest = units - rounded;
  if (rest > 0.5 || (rest === 0.5 && rounded & 1)) rounded++;
  if (rounded >= 2 << mantissaBits) {
    rounded >>= 1;
    exponent++;
  }
  if (rounded < 1 << mantissaBits) return sign | rounded; // subnormal (or zero)
  const code = ((exponent + bias) << mantissaBits) | (rounded - (1 << mantissaBits));
  return sign | Math.min(code, maxCode);
}

interface Float8Tables {
  readonly decode: Float32Array;
  /** Codes by the high 16 bits of a float32 whose low 16 bits are zero, and whose low bits are not. */
  readonly encodeExact: Uint8Array;
  readonly encodeSticky: Uint8Array;
}

const tables = new Map<Float8Format, Float8Tables>();
const scratch32 = new Float32Array(1);
const scratchBits = new Uint32Array(scratch32.buffer);

/**
 * Tables for whole arrays: 256 decoded values, and encodings keyed by a float32's high 16 bits.
 * Rounding to 3 or fewer mantissa bits decides at bit 19 or above, so the low 16 bits matter
 * only as a sticky bit (zero or not): two 64K tables encode every float32 exactly.
 */
export function float8Tables(format: Float8Format): Float8Tables {
  let built = tables.get(format);
  if (built === undefined) {
    const decode = new Float32Array(256);
    for (let code = 0; code < 256; code++) decode[code] = decodeSlow(format, code);
    const encodeExact = new Uint8Array(65536);
    const encodeSticky = new Uint8Array(65536);
    for (let high = 0; high < 65536; high++) {
      scratchBits[0] = high << 16;
      encodeExact[high] = encodeSlow(format, scratch32[0]);
      scratchBits[0] = (high << 16) | 1;
      encodeSticky[high] = encodeSlow(format, scratch32[0]);
    }
    built = { decode, encodeExact, encodeSticky };
    tables.set(format, built);
  }
  return built;
}

/**
 * Encodes numbers: by the tables when the value is a float32 (every value an array or a sum of
 * two fp8 values holds), else by the exact rounding, so no value is rounded twice.
 */
export function float8Encoder(format: Float8Format): (value: number) => number {
  // The tables are built at the first encoding, not when a module makes an encoder: every rank
  // loads the kernels, and few jobs use fp8 (building both formats' tables costs ~40 ms).
  let tables: Float8Tables | undefined;
  const f32 = new Float32Array(1);
  const bits = new Uint32Array(f32.buffer);
  return (value) => {
    f32[0] = value;
    if (f32[0] !== value && !Number.isNaN(value)) return encodeSlow(format, value);
    tables ??= float8Tables(format);
    const b = bits[0];
    return ((b & 0xffff) === 0 ? tables.encodeExact : tables.encodeSticky)[b >>> 16];
  };
}

const toE4m3 = float8Encoder('e4m3');
const toE5m2 = float8Encoder('e5m2');

export function float8e4m3ToFloat(bits: number): number {
  return float8Tables('e4m3').decode[bits & 0xff];
}

export function floatToFloat8e4m3(value: number): number {
  return toE4m3(value);
}

export function float8e5m2ToFloat(bits: number): number {
  return float8Tables('e5m2').decode[bits & 0xff];
}

export function floatToFloat8e5m2(value: number): number {
  return toE5m2(value);
}
