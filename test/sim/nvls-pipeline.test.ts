import assert from 'node:assert/strict';
import { test } from 'node:test';
import { nvlsChunkBytes, nvlsFillUs } from '../../src/sim/nvls-pipeline.js';
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

test('flow engine and analytical model agree on NVLS from 1 MB to 8 GB', () => {
  const graph = new TopologyGraph(loadTopology('dgx-h100'));
  for (const bytes of [1e6, 16e6, 128e6, 1e9, 8e9]) {
    const [flow, analytical] = (['flow', 'analytical'] as const).map((mode) => simulateRow(graph, graph.accelerators, {
      op: 'all_reduce', bytes, algorithm: 'nvls', mode, nvls: true, elementBytes: 4, root: 0,
    }).busbwGBs);
    assert.ok(Math.abs(flow - analytical) / flow < 0.05, `${bytes} B: flow ${flow}, analytical ${analytical}`);
  }
});
