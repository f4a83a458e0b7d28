import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { test } from 'node:test';
import { type DType, type TypedArray, dtypeInfo } from '../../src/dtypes/dtype.js';
import { reduceKernel, scaleKernel } from '../../src/kernels/reduce-kernel.js';
import { REDUCE_OPS } from '../../src/kernels/reduce-op.js';
import { arenaKernels } from '../../src/kernels/simd-kernels.js';
import { Arena } from '../../src/memory/arena.js';

const SIMD_TYPES: DType[] = ['float32', 'float64', 'int32', 'uint32', 'int8', 'uint8', 'int64', 'uint64'];

function fill(dtype: DType, arr: TypedArray, seed: number): void {
  const info = dtypeInfo(dtype);
  const specials = info.isFloat
    ? [NaN, 0, -0, Infinity, -Infinity, 3.4e38, -1e-40, 1.5]
    : [0, 1, -1, 127, -128, 2 ** 31 - 1, -(2 ** 31), 255];
  for (let i = 0; i < arr.length; i++) {
    const v = i % 7 === 0 ? specials[(i + seed) % specials.length] : ((i * 2654435761 + seed) % 1000) - 500;
    if (info.isBigInt) (arr as BigInt64Array)[i] = BigInt.asIntN(64, BigInt(Math.trunc(v)) * 0x100000001n);
    else (arr as Float64Array)[i] = v;
  }
}

const same = (x: unknown, y: unknown) =>
  Object.is(x, y) || (typeof x === 'number' && Number.isNaN(x) && Number.isNaN(y as number));

test('SIMD kernels match the JS kernels bit for bit: every type, op, tail length, and in place', () => {
  const arena = Arena.create();
  const kernels = arenaKernels(arena);
  assert.equal(kernels.kind, 'simd');
  let checked = 0;
  for (const dtype of SIMD_TYPES) {
    const info = dtypeInfo(dtype);
    for (const op of REDUCE_OPS) {
      if (op === 'avg' && !info.isFloat) continue;
      for (const n of [64, 65, 79, 1027]) {
        for (const inPlace of [false, true]) {
          const view = () =>
            arena.view(info.ctor as never, arena.allocate(n * info.bytes), n, info.bytes) as TypedArray;
          const a = view();
          const b = view();
          const d = inPlace ? a : view();
          fill(dtype, a, n);
          fill(dtype, b, n + 3);
          const wantA = a.slice() as TypedArray;
          const want = new info.ctor(n) as TypedArray;
          reduceKernel(dtype, op)(want, wantA, b);
          kernels.reduce(dtype, op)(d, a, b);
          for (let i = 0; i < n; i++) {
            assert.ok(
              same(d[i], want[i]),
              `${dtype} ${op} n=${n} inPlace=${inPlace} [${i}]: ${String(d[i])} vs ${String(want[i])}`,
            );
          }
          checked++;
        }
      }
    }
  }
  assert.ok(checked > 200);
});

test('the SIMD division that finishes an average matches the JS loop bit for bit, tails and specials included', () => {
  const arena = Arena.create();
  const kernels = arenaKernels(arena);
  for (const dtype of ['float32', 'float64'] as const) {
    const info = dtypeInfo(dtype);
    for (const n of [63, 64, 65, 79, 1027]) {
      for (const divisor of [2, 3, 7, 1000]) {
        const x = arena.view(info.ctor as never, arena.allocate(n * info.bytes), n, info.bytes) as Float64Array;
        fill(dtype, x, n + divisor);
        // Values whose quotients round: thirds and sevenths of odd numbers.
        for (let i = 1; i < n; i += 5) x[i] = (i * 1234567.89) / 3;
        const want = x.slice();
        scaleKernel(dtype)(want, divisor);
        kernels.scale(dtype)(x, divisor);
        for (let i = 0; i < n; i++)
          assert.ok(same(x[i], want[i]), `${dtype} n=${n} / ${divisor} [${i}]: ${x[i]} vs ${want[i]}`);
      }
    }
  }
});

test('plain arrays are staged through the arena block by block, in place too; short ones take the JS loop', () => {
  const kernels = arenaKernels(Arena.create());
  for (const dtype of ['float32', 'float64', 'int32', 'uint8'] as DType[]) {
    const info = dtypeInfo(dtype);
    for (const n of [((256 * 1024) / info.bytes) * 2 + 13, 100]) {
      // three staging blocks; under 2 KiB
      const [a, b, d, want] = [0, 1, 2, 3].map(() => new info.ctor(n) as TypedArray);
      fill(dtype, a, 1);
      fill(dtype, b, 2);
      reduceKernel(dtype, 'max')(want, a, b);
      kernels.reduce(dtype, 'max')(d, a, b);
      for (let i = 0; i < n; i++)
        assert.ok(same(d[i], want[i]), `${dtype} n=${n} [${i}]: ${String(d[i])} vs ${String(want[i])}`);
      kernels.reduce(dtype, 'max')(a, a, b); // in place: each block read before it is written
      for (let i = 0; i < n; i++) assert.ok(same(a[i], want[i]), `${dtype} n=${n} in place [${i}]`);
    }
  }
});

test('the committed kernel bytes match their source, and TSCCL_KERNEL=js turns them off', () => {
  const script = fileURLToPath(new URL('../../../scripts/build-kernels.mjs', import.meta.url));
  assert.match(execFileSync(process.execPath, [script, '--check']).toString(), /kernels up to date/);
  const probe = `import('${new URL('../../src/kernels/simd-kernels.js', import.meta.url).href}').then(async (k) => { const { Arena } = await import('${new URL('../../src/memory/arena.js', import.meta.url).href}'); console.log(k.arenaKernels(Arena.create()).kind); })`;
  assert.equal(
    execFileSync(process.execPath, ['-e', probe], { env: { ...process.env, TSCCL_KERNEL: 'js' } })
      .toString()
      .trim(),
    'js',
  );
});

test('an operand outside the arena (a TCP payload) is staged into it block by block, with the same result as the JS kernel', () => {
  const arena = Arena.create();
  const kernels = arenaKernels(arena);
  for (const dtype of ['float32', 'int64', 'int8'] as DType[]) {
    const info = dtypeInfo(dtype);
    const n = (256 * 1024) / info.bytes + 77; // more than one staging block
    const inArena = () => arena.view(info.ctor as never, arena.allocate(n * info.bytes), n, info.bytes) as TypedArray;
    const a = inArena();
    const d = inArena();
    const foreign = new info.ctor(n) as TypedArray;
    fill(dtype, a, 1);
    fill(dtype, foreign, 2);
    const want = new info.ctor(n) as TypedArray;
    reduceKernel(dtype, 'sum')(want, a, foreign);
    kernels.reduce(dtype, 'sum')(d, a, foreign);
    for (let i = 0; i < n; i++)
      assert.ok(same(d[i], want[i]), `${dtype} [${i}]: ${String(d[i])} vs ${String(want[i])}`);
    kernels.reduce(dtype, 'sum')(d, foreign, a); // the foreign operand first
    for (let i = 0; i < n; i++) assert.ok(same(d[i], want[i]), `${dtype} swapped [${i}]`);
  }
});
