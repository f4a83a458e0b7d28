import assert from 'node:assert/strict';
import { test } from 'node:test';
import { float8e4m3ToFloat, float8e5m2ToFloat, floatToFloat8e4m3, floatToFloat8e5m2 } from '../../src/dtypes/float8.js';
import { seededRandom } from '../../src/seeded-random.js';

interface Oracle {
  readonly name: string;
  readonly decode: (code: number) => number;
  readonly encode: (value: number) => number;
  readonly values: Map<number, number>;
  readonly max: number;
}

/**
 * The OCP FP8 spec's tables, built from the bit fields written out as strings (not the library's
 * arithmetic), and an encoder that searches every finite code for the nearest, ties to the even
 * code, saturating past the largest finite.
 */
function oracle(name: string, exponentBits: number, bias: number, isNanCode: (bits: string) => boolean): Oracle {
  const mantissaBits = 7 - exponentBits;
  const values = new Map<number, number>();
  for (let code = 0; code < 256; code++) {
    const bits = code.toString(2).padStart(8, '0');
    const e = Number.parseInt(bits.slice(1, 1 + exponentBits), 2);
    const m = Number.parseInt(bits.slice(1 + exponentBits), 2);
    const sign = bits[0] === '1' ? -1 : 1;
    let v: number;
    if (isNanCode(bits)) v = Number.NaN;
    else if (name === 'e5m2' && bits.slice(1) === '1111100') v = sign * Number.POSITIVE_INFINITY;
    else if (e === 0) v = sign * (m / 2 ** mantissaBits) * 2 ** (1 - bias);
    else v = sign * (1 + m / 2 ** mantissaBits) * 2 ** (e - bias);
    values.set(code, v);
  }
  const finite = [...values].filter(([, v]) => Number.isFinite(v));
  const max = Math.max(...finite.map(([, v]) => v));
  const encode = (value: number): number => {
    if (Number.isNaN(value)) return -1;
    if (value === Number.POSITIVE_INFINITY || value === Number.NEGATIVE_INFINITY) {
      const inf = [...values].find(([, v]) => v === value);
      if (inf) return inf[0];
    }
    const clamped = Math.max(-max, Math.min(max, value));
    let best = -1;
    let bestDistance = Number.POSITIVE_INFINITY;
    for (const [code, v] of finite) {
      if (Object.is(v, -0) !== Object.is(clamped, -0) && v === 0 && clamped === 0) continue;
      const d = Math.abs(v - clamped);
      if (d < bestDistance || (d === bestDistance && (code & 1) === 0 && (best & 1) === 1)) {
        best = code;
        bestDistance = d;
      }
    }
    // Zero keeps its sign; a tiny value rounds to the zero of its sign.
    if (values.get(best) === 0) return value < 0 || Object.is(value, -0) ? 0x80 : 0;
    return best;
  };
  return { name, decode: (c) => values.get(c)!, encode, values, max };
}

const E4M3 = oracle('e4m3', 4, 7, (b) => b.slice(1) === '1111111');
const E5M2 = oracle('e5m2', 5, 15, (b) => b.slice(1, 6) === '11111' && b.slice(6) !== '00');

const FORMATS = [
  { oracle: E4M3, decode: float8e4m3ToFloat, encode: floatToFloat8e4m3 },
  { oracle: E5M2, decode: float8e5m2ToFloat, encode: floatToFloat8e5m2 },
];

test('fp8 decodes every code as the OCP tables say (E4M3 max 448, E5M2 max 57344 and infinities)', () => {
  assert.equal(E4M3.max, 448);
  assert.equal(E5M2.max, 57344);
  for (const { oracle: o, decode } of FORMATS) {
    for (let code = 0; code < 256; code++) {
      const want = o.decode(code);
      const got = decode(code);
      if (Number.isNaN(want)) assert.ok(Number.isNaN(got), `${o.name} ${code.toString(16)} should be NaN`);
      else assert.ok(Object.is(got, want), `${o.name} code ${code.toString(16)}: ${got} vs ${want}`);
    }
  }
  assert.equal(float8e4m3ToFloat(0x01), 2 ** -9);
  assert.equal(float8e5m2ToFloat(0x01), 2 ** -16);
  assert.equal(float8e5m2ToFloat(0xfc), Number.NEGATIVE_INFINITY);
});

test('fp8 encoding matches the nearest-value search on every code, every midpoint and random floats', () => {
  const random = seededRandom(7);
  for (const { oracle: o, encode, decode } of FORMATS) {
    const finite = [...o.values.values()].filter(Number.isFinite).sort((a, b) => a - b);
    const probes: number[] = [...finite];
    for (let i = 1; i < finite.length; i++) {
      const mid = (finite[i - 1] + finite[i]) / 2;
      probes.push(mid, mid * (1 + 2 ** -20), mid * (1 - 2 ** -20));
    }
    for (let i = 0; i < 20000; i++)
      probes.push(Math.fround((random() - 0.5) * 2 * o.max * 2 ** -Math.floor(random() * 24)));
    probes.push(o.max * 1.01, -o.max * 4, 1e30, -1e30, 2 ** -30, -(2 ** -30));
    for (const value of probes) {
      const want = o.encode(value);
      const got = encode(value);
      assert.equal(
        decode(got),
        o.decode(want),
        `${o.name}(${value}) -> ${got.toString(16)} (${decode(got)}), expected ${want.toString(16)} (${o.decode(want)})`,
      );
      assert.ok(Object.is(decode(got), o.decode(want)), `${o.name}(${value}) sign of zero`);
    }
  }
});

test('fp8 saturates finite overflow, keeps NaN, and E5M2 keeps infinities while E4M3 saturates them', () => {
  assert.equal(float8e4m3ToFloat(floatToFloat8e4m3(1e6)), 448);
  assert.equal(float8e4m3ToFloat(floatToFloat8e4m3(Number.NEGATIVE_INFINITY)), -448);
  assert.equal(float8e5m2ToFloat(floatToFloat8e5m2(1e6)), 57344);
  assert.equal(float8e5m2ToFloat(floatToFloat8e5m2(Number.POSITIVE_INFINITY)), Number.POSITIVE_INFINITY);
  assert.ok(Number.isNaN(float8e4m3ToFloat(floatToFloat8e4m3(Number.NaN))));
  assert.ok(Number.isNaN(float8e5m2ToFloat(floatToFloat8e5m2(Number.NaN))));
  assert.equal(floatToFloat8e4m3(-0), 0x80);
  // 2^-10 is half the smallest E4M3 subnormal: a tie that goes to even (zero).
  assert.equal(float8e4m3ToFloat(floatToFloat8e4m3(2 ** -10)), 0);
  assert.equal(float8e4m3ToFloat(floatToFloat8e4m3(3 * 2 ** -10)), 2 * 2 ** -9);
});

test('fp8 rounds a double once: a value just past a midpoint that float32 would round onto it goes up', () => {
  // 1 + 2^-4 is the E4M3 midpoint between 1 and 1.125; 2^-40 above it is lost in float32.
  assert.equal(float8e4m3ToFloat(floatToFloat8e4m3(1 + 2 ** -4 + 2 ** -40)), 1.125);
  assert.equal(float8e4m3ToFloat(floatToFloat8e4m3(1 + 2 ** -4)), 1);
});
