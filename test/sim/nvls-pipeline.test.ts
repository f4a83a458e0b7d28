import assert from 'node:assert/strict';
import { test } from 'node:test';
import { nvlsChunkBytes, nvlsFillUs, nvlsSaturatedUs } from '../../src/sim/nvls-pipeline.js';
import { simulateRow } from '../../src/sim/simulate.js';
import { SWITCH_KINDS } from '../../src/topology/catalog.js';
import { loadTopology } from '../../src/topology/load-topology.js';
import { TopologyGraph } from '../../src/topology/topology-graph.js';

test('the NVLS chunk shrinks for smaller calls as NCCL shrinks it (16 channels x 8 heads)', () => {
  const operations = 16 * 8;
  assert.equal(nvlsChunkBytes(1e6, operations), 16384);
  assert.equal(nvlsChunkBytes(16e6, operations), 32768);
  assert.equal(nvlsChunkBytes(128e6, operations), 65536);
  assert.equal(nvlsChunkBytes(2 ** 30, operations), 131072);
  assert.equal(nvlsChunkBytes(8e9, operations), 131072);
});

test('the pipeline fill grows with the chunk, and with the operations sharing the port', () => {
  const h100 = SWITCH_KINDS.nvswitch3;
  const rate = 300_000;
  assert.ok(nvlsFillUs(1e6, 8, h100, rate) < nvlsFillUs(16e6, 8, h100, rate));
  assert.ok(nvlsFillUs(16e6, 8, h100, rate) < nvlsFillUs(8e9, 8, h100, rate));
  assert.ok(nvlsFillUs(8e9, 4, h100, rate) < nvlsFillUs(8e9, 8, h100, rate));
});

test('NVLS bus bandwidth stops growing past 8 GPUs: the links bound it up to there, the saturation beyond', () => {
  const rate = 534_000; // B200 ports at NCCL's NVLS efficiency, bytes/us
  const bytes = 8e9;
  for (const n of [2, 4, 8]) assert.equal(nvlsSaturatedUs(bytes, n, rate), 0);
  const busGBps = (n: number, us: number) => (bytes * 2 * (n - 1)) / n / us / 1000;
  // On 8 GPUs the links carry (1 + 1/8) of the data; the saturated bus rate is what that gives.
  const linksAt8 = (bytes * (1 + 1 / 8)) / rate;
  for (const n of [16, 72])
    assert.ok(Math.abs(busGBps(n, nvlsSaturatedUs(bytes, n, rate)) - busGBps(8, linksAt8)) < 1e-6, `${n} GPUs`);
  const nvl72 = new TopologyGraph(loadTopology('gb200-nvl72'));
  const row = simulateRow(nvl72, nvl72.accelerators, {
    op: 'all_reduce',
    bytes,
    algorithm: 'nvls',
    mode: 'flow',
    nvls: true,
    elementBytes: 4,
    root: 0,
  });
  assert.ok(row.busbwGBs < busGBps(8, linksAt8), `72 GPUs: ${row.busbwGBs} GB/s`);
});

test('flow engine and analytical model agree on NVLS from 1 MB to 8 GB', () => {
  const graph = new TopologyGraph(loadTopology('dgx-h100'));
  for (const bytes of [1e6, 16e6, 128e6, 1e9, 8e9]) {
    const [flow, analytical] = (['flow', 'analytical'] as const).map(
      (mode) =>
        simulateRow(graph, graph.accelerators, {
          op: 'all_reduce',
          bytes,
          algorithm: 'nvls',
          mode,
          nvls: true,
          elementBytes: 4,
          root: 0,
        }).busbwGBs,
    );
    assert.ok(Math.abs(flow - analytical) / flow < 0.05, `${bytes} B: flow ${flow}, analytical ${analytical}`);
  }
});
