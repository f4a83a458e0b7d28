#!/usr/bin/env node
// Reduction kernels side by side in one run: the JS loop vs WASM SIMD on the same arena arrays
// (alternating, median of rounds), then all_reduce through tsccl bench with TSCCL_KERNEL=js vs auto.
import { execFileSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { reduceKernel } from '../dist/src/kernels/reduce-kernel.js';
import { arenaKernels } from '../dist/src/kernels/simd-kernels.js';
import { Arena } from '../dist/src/memory/arena.js';
import { dtypeInfo } from '../dist/src/dtypes/dtype.js';

const arena = Arena.create();
const simd = arenaKernels(arena);
const n = 4 * 1024 * 1024;
const median = (xs) => xs.sort((a, b) => a - b)[xs.length >> 1];
console.log(`# reduce kernels, ${n} elements in the shared arena, GB/s of output (median of 7 alternating rounds)`);
console.log('| dtype | op | JS | SIMD | SIMD/JS |\n|---|---|---:|---:|---:|');
for (const [dtype, op] of [
  ['float32', 'sum'],
  ['float32', 'max'],
  ['float64', 'sum'],
  ['int32', 'sum'],
  ['int8', 'sum'],
  ['int64', 'sum'],
]) {
  const info = dtypeInfo(dtype);
  const view = () => arena.view(info.ctor, arena.allocate(n * info.bytes), n, info.bytes);
  const [d, a, b] = [view(), view(), view()];
  const timesJs = [];
  const timesSimd = [];
  for (let round = 0; round < 7; round++) {
    for (const [kernel, times] of [
      [reduceKernel(dtype, op), timesJs],
      [simd.reduce(dtype, op), timesSimd],
    ]) {
      const t = performance.now();
      kernel(d, a, b);
      times.push(performance.now() - t);
    }
  }
  const gbs = (ms) => (n * info.bytes) / (ms * 1e6);
  const js = gbs(median(timesJs));
  const wasm = gbs(median(timesSimd));
  console.log(`| ${dtype} | ${op} | ${js.toFixed(2)} | ${wasm.toFixed(2)} | ${(wasm / js).toFixed(2)} |`);
}

const bin = fileURLToPath(new URL('../bin/tsccl.js', import.meta.url));
console.log(
  '\n# all_reduce float32 sum, thread ranks, busbw GB/s out-of-place (alternating JS / SIMD runs, best of 2)',
);
console.log('| ranks | bytes | JS kernels | SIMD kernels | SIMD/JS |\n|---:|---:|---:|---:|---:|');
for (const ranks of [2, 4]) {
  const best = {};
  for (let round = 0; round < 2; round++) {
    for (const kernel of ['js', 'auto']) {
      const doc = JSON.parse(
        execFileSync(
          process.execPath,
          [
            bin,
            'bench',
            '-g',
            String(ranks),
            '-b',
            '8M',
            '-e',
            '128M',
            '-f',
            '4',
            '-n',
            '5',
            '-w',
            '2',
            '-c',
            '0',
            '--format',
            'json',
          ],
          { env: { ...process.env, TSCCL_KERNEL: kernel }, maxBuffer: 1 << 24 },
        ).toString(),
      );
      for (const row of doc.rows.filter((r) => !r.inPlace)) {
        const key = `${row.bytes}|${kernel}`;
        best[key] = Math.max(best[key] ?? 0, row.busbwGBs);
      }
    }
  }
  for (const bytes of [8388608, 33554432, 134217728]) {
    const js = best[`${bytes}|js`];
    const s = best[`${bytes}|auto`];
    console.log(`| ${ranks} | ${bytes} | ${js.toFixed(2)} | ${s.toFixed(2)} | ${(s / js).toFixed(2)} |`);
  }
}
