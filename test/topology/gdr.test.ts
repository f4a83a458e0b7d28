import assert from 'node:assert/strict';
import { test } from 'node:test';
import { buildPreset } from '../../src/topology/presets/presets.js';
import type { PresetOptions } from '../../src/topology/presets/presets.js';
import { TopologyGraph } from '../../src/topology/topology-graph.js';

/** The devices a route from accelerator `a` to accelerator `b` passes through, and whether it stages. */
function way(name: string, options: PresetOptions, a: string, b: string): { through: string[]; staged: boolean } {
  const graph = new TopologyGraph(buildPreset(name, { nodes: 2, ...options }));
  const path = graph.route(graph.deviceIndex(a), graph.deviceIndex(b));
  const through = [...path].map((l) => graph.devices[graph.link(l).to].id);
  return { through, staged: [...path].some((l) => graph.link(l).kind === 'staging') };
}

test('GPUDirect RDMA off stages traffic between hosts in host memory at both ends; on, the NIC reads the GPU directly', () => {
  const off = way('dgx-h100', { gdr: 'off' }, 'n0.gpu0', 'n1.gpu0');
  assert.ok(off.staged, off.through.join(' '));
  assert.ok(off.through.includes('n0.cpu0') && off.through.includes('n1.cpu0'), off.through.join(' '));
  const on = way('dgx-h100', { gdr: 'on' }, 'n0.gpu0', 'n1.gpu0');
  assert.ok(!on.staged && !on.through.some((d) => d.includes('cpu')), on.through.join(' '));
});

test("auto follows NCCL's rule: direct behind a PCIe switch or over C2C, staged through a CPU's PCIe root", () => {
  // DGX H100: each GPU's NIC sits under its PCIe switch (PXB): direct, as with on.
  assert.deepEqual(way('dgx-h100', {}, 'n0.gpu0', 'n1.gpu0'), way('dgx-h100', { gdr: 'on' }, 'n0.gpu0', 'n1.gpu0'));
  // GB200: the NIC hangs off the Grace the GPU reaches over NVLink-C2C (NCCL_NET_GDR_C2C): direct.
  assert.ok(!way('gb200-nvl72', {}, 'n0.gpu0', 'n1.gpu0').staged);
  // A PCIe server with one NIC under the first switch: GPUs under another switch reach it through the CPU.
  const near = way('pcie-server', { nicsPerNode: 1 }, 'n0.gpu0', 'n1.gpu0');
  const far = way('pcie-server', { nicsPerNode: 1 }, 'n0.gpu7', 'n1.gpu7');
  assert.ok(!near.staged, near.through.join(' '));
  assert.ok(far.staged, far.through.join(' '));
});

test('GPUDirect RDMA off where the NIC is built into the accelerator is refused, naming both', () => {
  assert.throws(() => way('ascend-910b', { gdr: 'off' }, 'n0.npu0', 'n1.npu0'), {
    code: 'TSCCL_ERR_INVALID_ARGUMENT',
    details: { argument: '--gdr' },
    message: /n0\.roce0 cannot be reached from a CPU \(it is built into n0\.npu0\)/,
  });
});

test('2 x DGX-1 V100 ring all-reduce of 1 GiB: GDR off halves the bus bandwidth, the PCIe uplinks carrying each message twice', async () => {
  const { simulateRow } = await import('../../src/sim/simulate.js');
  const busbw = (gdr: 'on' | 'off', mode: 'flow' | 'analytical' = 'flow') => {
    const graph = new TopologyGraph(buildPreset('dgx1-v100', { nodes: 2, gdr }));
    return simulateRow(graph, graph.accelerators, {
      op: 'all_reduce',
      bytes: 2 ** 30,
      algorithm: 'ring',
      mode,
      nvls: false,
      elementBytes: 4,
      root: 0,
    });
  };
  const on = busbw('on');
  const off = busbw('off');
  assert.ok(Math.abs(off.busbwGBs / on.busbwGBs - 0.5) < 0.05, `${off.busbwGBs} against ${on.busbwGBs}`);
  assert.match(off.bottleneck?.link ?? '', /pcisw\d->n\d\.cpu\d/);
  // The analytical model sees the staging too: both ways of every rank's traffic at once.
  for (const gdr of ['on', 'off'] as const) {
    const analytical = busbw(gdr, 'analytical').busbwGBs;
    const flow = gdr === 'on' ? on.busbwGBs : off.busbwGBs;
    assert.ok(Math.abs(analytical / flow - 1) < 0.02, `${gdr}: analytical ${analytical} against flow ${flow}`);
  }
});
