import assert from 'node:assert/strict';
import { test } from 'node:test';
import { dtypeInfo } from '../../src/dtypes/dtype.js';
import { bfloat16ToFloat, floatToHalf, halfToFloat } from '../../src/dtypes/half.js';
import { reduceKernel, scaleKernel } from '../../src/kernels/reduce-kernel.js';
import { checkOpForType } from '../../src/kernels/reduce-op.js';

test('integer sums and products wrap as the dtype does', () => {
  const i8 = new Int8Array([127, -128, 100]);
  reduceKernel('int8', 'sum')(i8, i8, new Int8Array([1, -1, 100]));
  assert.deepEqual([...i8], [-128, 127, -56]);
  const u32 = new Uint32Array([0xffffffff, 0x10000]);
  reduceKernel('uint32', 'prod')(u32, u32, new Uint32Array([2, 0x10000]));
  assert.deepEqual([...u32], [0xfffffffe, 0]); // exact low 32 bits, not a rounded double
  const i32 = new Int32Array([0x7fffffff, 46341]);
  reduceKernel('int32', 'prod')(i32, i32, new Int32Array([3, 46341]));
  assert.deepEqual([...i32], [Math.imul(0x7fffffff, 3), Math.imul(46341, 46341)]);
  const i64 = new BigInt64Array([2n ** 63n - 1n]);
  reduceKernel('int64', 'sum')(i64, i64, new BigInt64Array([1n]));
  assert.equal(i64[0], -(2n ** 63n));
  const u64 = new BigUint64Array([5n, 9n]);
  reduceKernel('uint64', 'min')(u64, u64, new BigUint64Array([7n, 3n]));
  assert.deepEqual([...u64], [5n, 3n]);
});

test('float min and max propagate NaN and are commutative; sums overflow to infinity', () => {
  for (const op of ['min', 'max'] as const) {
    const a = new Float32Array([NaN, 1, -0]);
    const b = new Float32Array([1, NaN, 0]);
    const ab = new Float32Array(3);
    const ba = new Float32Array(3);
    reduceKernel('float32', op)(ab, a, b);
    reduceKernel('float32', op)(ba, b, a);
    assert.ok(Number.isNaN(ab[0]) && Number.isNaN(ab[1]));
    assert.ok(Object.is(ab[2], ba[2]));
  }
  const f = new Float32Array([3e38]);
  reduceKernel('float32', 'sum')(f, f, new Float32Array([3e38]));
  assert.equal(f[0], Infinity);
});

test('float16 and bfloat16 reduce with their own rounding', () => {
  const h = new Uint16Array([floatToHalf(2048)]);
  reduceKernel('float16', 'sum')(h, h, new Uint16Array([floatToHalf(1)]));
  assert.equal(halfToFloat(h[0]), 2048); // 2049 is not a float16: tie rounds to even
  const big = new Uint16Array([floatToHalf(60000)]);
  reduceKernel('float16', 'sum')(big, big, new Uint16Array([floatToHalf(60000)]));
  assert.equal(halfToFloat(big[0]), Infinity);
  const b = new Uint16Array([0x3f80]); // 1.0
  reduceKernel('bfloat16', 'prod')(b, b, new Uint16Array([0x4040])); // 3.0
  assert.equal(bfloat16ToFloat(b[0]), 3);
  scaleKernel('float16')(h, 4);
  assert.equal(halfToFloat(h[0]), 512);
});

test('avg is refused for integer types', () => {
  assert.throws(() => checkOpForType('avg', dtypeInfo('int32')), { code: 'TSCCL_ERR_INVALID_ARGUMENT' });
  checkOpForType('avg', dtypeInfo('bfloat16'));
});
