import assert from 'node:assert/strict';
import { test } from 'node:test';
import { BENCH_OPS, benchOp, parseSize, sweepSizes } from '../../src/algorithms/bench-ops.js';
import { aggregateRows } from '../../src/bench/run-bench.js';
import type { BenchOptions } from '../../src/bench/bench-options.js';

test('sizes parse like nccl-tests (K, M, G are powers of 1024)', () => {
  assert.equal(parseSize('8', '-b'), 8);
  assert.equal(parseSize('64K', '-b'), 65536);
  assert.equal(parseSize('64M', '-e'), 64 * 2 ** 20);
  assert.equal(parseSize('1G', '-e'), 2 ** 30);
  assert.throws(() => parseSize('lots', '-e'), /-e 'lots' is not a size/);
  assert.deepEqual(sweepSizes(8, 128, 4, 0), [8, 32, 128]);
  assert.deepEqual(sweepSizes(10, 30, 1, 10), [10, 20, 30]);
});

test('counts and bus-bandwidth factors follow nccl-tests PERFORMANCE.md', () => {
  assert.equal(BENCH_OPS.all_reduce.busFactor(4), 1.5);
  assert.equal(BENCH_OPS.all_gather.busFactor(4), 0.75);
  assert.equal(BENCH_OPS.broadcast.busFactor(8), 1);
  // all_gather of 1 MB float over 4 ranks: 65536 per rank, 262144 total.
  assert.deepEqual(BENCH_OPS.all_gather.counts(262144, 4), {
    send: 65536,
    recv: 262144,
    param: 65536,
    algorithm: 262144,
  });
  assert.deepEqual(BENCH_OPS.reduce_scatter.counts(262144, 4), {
    send: 262144,
    recv: 65536,
    param: 65536,
    algorithm: 262144,
  });
  assert.equal(BENCH_OPS.all_gather.counts(8, 4).param, 0); // too small to split: nccl-tests prints count 0
  assert.equal(benchOp('allreduce').name, 'all_reduce');
  assert.throws(() => benchOp('all_sum'), /Unknown bench op 'all_sum'/);
});

test('rows average time over ranks, sum wrong elements and derive algbw and busbw', () => {
  const options: BenchOptions = {
    op: 'all_reduce',
    ranks: 2,
    minBytes: 1 << 20,
    maxBytes: 1 << 20,
    stepFactor: 2,
    stepBytes: 0,
    iters: 1,
    warmupIters: 0,
    check: true,
    dtype: 'float32',
    redop: 'sum',
    root: 0,
    timeoutMs: 1000,
  };
  const rows = aggregateRows(options, [
    [
      [
        { timeUs: 100, wrong: 0 },
        { timeUs: 300, wrong: 2 },
      ],
    ],
    [
      [
        { timeUs: 300, wrong: 0 },
        { timeUs: 100, wrong: 1 },
      ],
    ],
  ]);
  assert.equal(rows.length, 2);
  assert.equal(rows[0].timeUs, 200);
  assert.equal(rows[0].algbwGBs, (1 << 20) / 200e3);
  assert.equal(rows[0].busbwGBs, rows[0].algbwGBs * 1);
  assert.equal(rows[1].wrong, 3);
  assert.equal(rows[1].inPlace, true);
});
