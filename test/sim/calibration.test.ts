import assert from 'node:assert/strict';
import { fileURLToPath } from 'node:url';
import { test } from 'node:test';
import type { SimMode } from '../../src/sim/simulate.js';
import type { PresetOptions } from '../../src/topology/presets/presets.js';
import { type PublishedCase, simulateCase } from '../fixtures/simulate-case.js';

/**
 * The calibration rows C1-C7 of ../shared/reference/hardware.md, each run with the algorithm
 * the measurement used (ring; NVLS for C2; all-pairs, our direct, for C4's mid sizes, see
 * docs/SIMULATOR.md), and C1 16 MB with its protocol: C1's 1 GB and 8 GB
 * rows, both Simple, put each call at 142 us plus 2(n-1)/n x bytes at 232 GB/s, and that line
 * gives 109.5 GB/s at 16 MiB, where 109.2 was measured (LL128 would be faster at that size, by
 * NCCL's model and ours). `tolerance` is 10% except where the model is known
 * to miss: mid-size rows where NCCL's channel and protocol heuristics do something the model
 * does not (see docs/SIMULATOR.md, "Where the model misses"). Those bounds are the measured
 * miss rounded up, so a regression still fails the test. TSCCL_CALIBRATION_REPORT=1 prints
 * every row's prediction (the table in docs/SIMULATOR.md).
 */
interface Case extends PublishedCase {
  id: string;
  busbw?: number;
  timeUs?: number;
  tolerance: number;
}
// nccl-tests' sizes are powers of two ("1 MB" is 2^20 bytes): C1 and C2 are the 1M, 16M, 134M, 1G
// and 8G rows of Microsoft's ND A100 v4 and ND H100 v5 tables (Azure/AI-benchmarking-guide).
const MiB = 2 ** 20;
const GiB = 2 ** 30;
const hgx4 = fileURLToPath(new URL('../../../test/fixtures/topologies/hgx-a100-4gpu.json', import.meta.url));
const C5: PresetOptions = { nodes: 2, nicsPerNode: 4, nicGbps: 200 };
const C7: PresetOptions = { nodes: 2, nicsPerNode: 8, nicGbps: 100, nicKind: 'roce' };
const CASES: Case[] = [
  { id: 'C1 8 GB', topo: 'dgx-a100', options: {}, algorithm: 'ring', bytes: 8 * GiB, busbw: 231.6, tolerance: 0.1 },
  { id: 'C1 1 GB', topo: 'dgx-a100', options: {}, algorithm: 'ring', bytes: GiB, busbw: 228.1, tolerance: 0.1 },
  // The 16 MB run used the protocol of the large sizes: it lies on their line (next comment).
  {
    id: 'C1 16 MB',
    topo: 'dgx-a100',
    options: {},
    algorithm: 'ring',
    protocol: 'Simple',
    bytes: 16 * MiB,
    busbw: 109.2,
    tolerance: 0.1,
  },
  { id: 'C1 1 MB', topo: 'dgx-a100', options: {}, algorithm: 'ring', bytes: MiB, busbw: 36.2, tolerance: 0.1 },
  { id: 'C2 8 GB', topo: 'dgx-h100', options: {}, algorithm: 'nvls', bytes: 8 * GiB, busbw: 478.9, tolerance: 0.1 },
  { id: 'C2 1 GB', topo: 'dgx-h100', options: {}, algorithm: 'nvls', bytes: GiB, busbw: 466.4, tolerance: 0.1 },
  { id: 'C2 128 MB', topo: 'dgx-h100', options: {}, algorithm: 'nvls', bytes: 128 * MiB, busbw: 400.6, tolerance: 0.1 },
  { id: 'C2 16 MB', topo: 'dgx-h100', options: {}, algorithm: 'nvls', bytes: 16 * MiB, busbw: 234.5, tolerance: 0.1 },
  { id: 'C2 1 MB', topo: 'dgx-h100', options: {}, algorithm: 'nvls', bytes: MiB, busbw: 43.7, tolerance: 0.1 },
  { id: 'C3 16 GiB', topo: 'hgx-h200', options: {}, algorithm: 'ring', bytes: 16 * GiB, busbw: 367.6, tolerance: 0.1 },
  { id: 'C4 16 GB', topo: 'mi300x', options: {}, algorithm: 'ring', bytes: 16 * GiB, busbw: 319.0, tolerance: 0.1 },
  { id: 'C4 1 GB', topo: 'mi300x', options: {}, algorithm: 'ring', bytes: GiB, busbw: 314.7, tolerance: 0.1 },
  // RCCL runs MSCCL's all-pairs all-reduce over Simple on one 8-GPU MI300X node from 512 KiB to 16 MiB.
  {
    id: 'C4 16 MB',
    topo: 'mi300x',
    options: {},
    algorithm: 'direct',
    protocol: 'Simple',
    bytes: 16 * MiB,
    busbw: 197.3,
    tolerance: 0.1,
  },
  {
    id: 'C4 1 MB',
    topo: 'mi300x',
    options: {},
    algorithm: 'direct',
    protocol: 'Simple',
    bytes: MiB,
    busbw: 66.9,
    tolerance: 0.18,
  },
  { id: 'C5 4 GB', topo: 'dgx-a100', options: C5, algorithm: 'ring', bytes: 4 * GiB, busbw: 86, tolerance: 0.13 },
  { id: 'C6 8 B', topo: hgx4, options: {}, algorithm: 'ring', bytes: 8, timeUs: 12.5, tolerance: 0.1 },
  { id: 'C7 8 B', topo: 'dgx-a100', options: C7, algorithm: 'ring', bytes: 8, timeUs: 93.1, tolerance: 0.1 },
];

for (const mode of ['flow', 'analytical'] as SimMode[]) {
  test(`calibration rows C1-C7 are predicted within their tolerance (${mode})`, () => {
    const misses: string[] = [];
    const report: string[] = [];
    for (const c of CASES) {
      const row = simulateCase(c, mode);
      const [predicted, measured] = c.busbw !== undefined ? [row.busbwGBs, c.busbw] : [row.timeUs, c.timeUs!];
      const error = Math.abs(predicted - measured) / measured;
      report.push(
        `${mode} ${c.id}: predicted ${predicted.toFixed(1)}, measured ${measured}, ${((predicted / measured - 1) * 100).toFixed(1)}%`,
      );
      if (error > c.tolerance)
        misses.push(
          `${c.id}: predicted ${predicted.toFixed(1)}, measured ${measured}, error ${(error * 100).toFixed(1)}% > ${c.tolerance * 100}%`,
        );
    }
    if (process.env.TSCCL_CALIBRATION_REPORT) console.log(report.join('\n'));
    assert.deepEqual(misses, []);
  });
}

test('the other side of C5: one node alone reaches NVLink speed', () => {
  const row = simulateCase({ topo: 'dgx-a100', options: {}, algorithm: 'ring', bytes: 4 * GiB }, 'flow');
  assert.ok(Math.abs(row.busbwGBs - 232.5) / 232.5 < 0.1, `${row.busbwGBs}`);
});
