import assert from 'node:assert/strict';
import { test } from 'node:test';
import { layoutGroups, linkUsage } from '../../src/sim/link-usage.js';
import { buildPreset } from '../../src/topology/presets/presets.js';
import { TopologyGraph } from '../../src/topology/topology-graph.js';

const usage = (preset: string, tp: number, kind: 'tp' | 'pp' = 'tp', pp = 1) => {
  const graph = new TopologyGraph(buildPreset(preset));
  const groups = layoutGroups({ tp, pp, dp: 8 / (tp * pp) }, kind);
  return linkUsage(graph, groups, { op: kind === 'pp' ? 'sendrecv' : 'all_reduce', bytes: 64 * 2 ** 20, nvls: false })
    .devices;
};

test("8-NPU full mesh: a TP group of 4 uses 3 of each NPU's 7 links, TP=8 uses all 7 (the seeds' statement)", () => {
  for (const d of usage('ascend-910b', 4))
    assert.deepEqual([d.used['scale-up'], d.total['scale-up']], [3, 7], d.device);
  for (const d of usage('ascend-910b', 8))
    assert.deepEqual([d.used['scale-up'], d.total['scale-up']], [7, 7], d.device);
});

test('8-NPU full mesh: pipeline traffic between two stages uses a single link', () => {
  const devices = usage('ascend-910b', 1, 'pp', 8);
  assert.ok(devices.every((d) => (d.used['scale-up'] ?? 0) <= 2));
  assert.equal(devices.find((d) => d.device === 'npu0')!.used['scale-up'], 1);
});

test('behind NVSwitch, TP = 2, 4 and 8 all use every NVLink of every GPU', () => {
  for (const tp of [2, 4, 8])
    for (const d of usage('dgx-h100', tp))
      assert.deepEqual([d.used['scale-up'], d.total['scale-up']], [18, 18], `tp ${tp} ${d.device}`);
});
