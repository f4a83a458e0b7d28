import assert from 'node:assert/strict';
import { test } from 'node:test';
import { channelCount, channelRings } from '../../src/sim/channel-rings.js';
import { simulateRow } from '../../src/sim/simulate.js';
import { buildPreset } from '../../src/topology/presets/presets.js';
import { TopologyGraph } from '../../src/topology/topology-graph.js';

const graphOf = (name: string, options = {}) => new TopologyGraph(buildPreset(name, options));

test('channel count: one per NIC on a switch, one per cycle on a mesh, and the fewest that load the busiest link or NIC least', () => {
  const even = { cycle: 1, nic: 1 };
  assert.equal(channelCount(1, 1, even), 1);
  assert.equal(channelCount(1, 8, { cycle: 370, nic: 47 }), 8);
  assert.equal(channelCount(1, 4, { cycle: 230, nic: 24 }), 4);
  assert.equal(channelCount(7, 1, { cycle: 50, nic: Infinity }), 7);
  // 8 channels on 7 cycles put two on one cycle's links: worse than 7 where links and NICs are alike.
  assert.equal(channelCount(7, 8, { cycle: 50, nic: 47 }), 7);
  // Where the NICs are far slower than the mesh, loading every NIC wins over loading the cycles evenly.
  assert.ok(channelCount(7, 8, { cycle: 45, nic: 23 }) > 7);
  assert.equal(channelCount(6, 4, { cycle: 40, nic: 12 }), 4);
});

test('across mesh servers every NIC carries its even share of channels each way', () => {
  for (const name of ['mi300x', 'ascend-910b', 'dgx1-v100']) {
    const graph = graphOf(name, { nodes: 2 });
    const ranks = graph.accelerators;
    const rings = channelRings(graph, ranks);
    const hostOf = (r: number) => graph.devices[ranks[r]].host ?? 0;
    const nicOf = (r: number) => graph.devices[ranks[r]].nic ?? '';
    const nics = new Set(ranks.filter((_, r) => hostOf(r) === 0).map((_, r) => nicOf(r))).size;
    const leaving = new Map<string, number>();
    const entering = new Map<string, number>();
    for (const ring of rings) {
      assert.deepEqual(
        [...ring].sort((a, b) => a - b),
        ranks.map((_, r) => r),
        `${name}: a ring is a permutation of the ranks`,
      );
      ring.forEach((r, i) => {
        const next = ring[(i + 1) % ring.length];
        if (hostOf(r) === hostOf(next)) return;
        leaving.set(nicOf(r), (leaving.get(nicOf(r)) ?? 0) + 1);
        entering.set(nicOf(next), (entering.get(nicOf(next)) ?? 0) + 1);
      });
    }
    const cap = Math.ceil(rings.length / nics);
    for (const [nic, count] of [...leaving, ...entering])
      assert.ok(count <= cap, `${name}: ${nic} carries ${count} of ${rings.length} channels (even share ${cap})`);
  }
});

test("a ring all-reduce across two MI300X servers runs at its links' rate, as the analytical model prices it", () => {
  // It ran at 96.8 GB/s busbw when four of its eight channels left through one NIC.
  const graph = graphOf('mi300x', { nodes: 2 });
  const run = (mode: 'flow' | 'analytical') =>
    simulateRow(graph, graph.accelerators, {
      op: 'all_reduce',
      bytes: 2 ** 30,
      algorithm: 'ring',
      protocols: ['Simple'],
      mode,
      nvls: false,
      elementBytes: 4,
      root: 0,
    });
  const flow = run('flow');
  const analytical = run('analytical');
  assert.ok(flow.busbwGBs > 250, `${flow.busbwGBs}`);
  assert.ok(
    Math.abs(analytical.timeUs - flow.timeUs) / flow.timeUs < 0.1,
    `flow ${flow.timeUs}, analytical ${analytical.timeUs}`,
  );
});
