import assert from 'node:assert/strict';
import { test } from 'node:test';
import { bfloat16ToFloat, floatToBfloat16, floatToHalf, halfToFloat } from '../../src/dtypes/half.js';

test('float16 round-trips every one of its 65536 bit patterns (NaN stays NaN)', () => {
  for (let h = 0; h < 65536; h++) {
    const f = halfToFloat(h);
    if (Number.isNaN(f)) assert.ok(Number.isNaN(halfToFloat(floatToHalf(f))));
    else assert.equal(floatToHalf(f), h, `bits ${h.toString(16)}`);
  }
});

test('float16 encoding rounds to nearest, ties to even, and saturates to infinity', () => {
  assert.equal(halfToFloat(floatToHalf(1 + 2 ** -11)), 1); // tie -> even (1.0)
  assert.equal(halfToFloat(floatToHalf(1 + 3 * 2 ** -11)), 1 + 2 ** -9); // tie -> even (up)
  assert.equal(halfToFloat(floatToHalf(1 + 2 ** -11 + 2 ** -20)), 1 + 2 ** -10); // above tie -> up
  assert.equal(halfToFloat(floatToHalf(65504)), 65504);
  assert.equal(halfToFloat(floatToHalf(65520)), Infinity); // halfway to the next binade rounds up
  assert.equal(halfToFloat(floatToHalf(2 ** -24)), 2 ** -24); // smallest subnormal
  assert.equal(halfToFloat(floatToHalf(2 ** -26)), 0);
  assert.equal(floatToHalf(-0), 0x8000);
  assert.ok(Number.isNaN(halfToFloat(floatToHalf(NaN))));
});

test('bfloat16 round-trips its bit patterns and rounds ties to even', () => {
  for (let h = 0; h < 65536; h += 7) {
    const f = bfloat16ToFloat(h);
    if (!Number.isNaN(f)) assert.equal(floatToBfloat16(f), h);
  }
  assert.equal(bfloat16ToFloat(floatToBfloat16(1 + 2 ** -8)), 1);
  assert.equal(bfloat16ToFloat(floatToBfloat16(1 + 3 * 2 ** -8)), 1 + 2 ** -6);
  assert.ok(Number.isNaN(bfloat16ToFloat(floatToBfloat16(NaN))));
  assert.equal(bfloat16ToFloat(floatToBfloat16(Infinity)), Infinity);
});
