import assert from 'node:assert/strict';
import { test } from 'node:test';
import { libraryChannelCount } from '../../src/sim/library-channels.js';
import { simulateRow } from '../../src/sim/simulate.js';
import { buildPreset } from '../../src/topology/presets/presets.js';
import { TopologyGraph } from '../../src/topology/topology-graph.js';
import { parseTopology } from '../../src/topology/topology-schema.js';

const h100 = new TopologyGraph(parseTopology(buildPreset('dgx-h100'), 'dgx-h100'));
const channelsOf = (call: Parameters<typeof libraryChannelCount>[2]) =>
  libraryChannelCount(h100, h100.accelerators, call);
const ring = (bytes: number, protocol = 'LL') => ({
  collective: 'allReduce' as const,
  algorithm: 'ring',
  protocol,
  count: bytes / 4,
  elementBytes: 4,
  nranks: 8,
});

test('NCCL boards declare the ring and tree channels NCCL sets up: two per NVLink of a GPU, at most 32', () => {
  assert.equal(h100.topology.libraryChannels, 32);
  assert.equal(buildPreset('hgx-h800').libraryChannels, 16);
  assert.equal(buildPreset('dgx-a100').libraryChannels, 24);
  // Not every topology says: a CPU cluster keeps the model's own count.
  assert.equal(buildPreset('pcie-server').libraryChannels, undefined);
});

test("a call takes one channel more for every protocol threshold's worth of bytes per thread, as NCCL's size rule does", () => {
  // A ring's LL threshold is 8 B per thread times the ranks: 512 threads x 64 B = 32 KiB a channel.
  assert.equal(channelsOf(ring(8)), 1);
  assert.equal(channelsOf(ring(32 * 1024)), 1);
  assert.equal(channelsOf(ring(256 * 1024)), 8);
  assert.equal(channelsOf(ring(1 << 30)), 32);
  // Simple: 64 B per thread whatever the ranks.
  assert.equal(channelsOf(ring(256 * 1024, 'Simple')), 8);
  // An all-gather's bytes are every rank's part.
  assert.equal(channelsOf({ ...ring(32 * 1024), collective: 'allGather' }), 8);
  // NVLS runs on the switch's channels at every size: 16 on NVSwitch gen3, 24 on gen4.
  assert.equal(channelsOf({ ...ring(8), algorithm: 'nvls', protocol: 'Simple' }), 16);
  const b200 = new TopologyGraph(parseTopology(buildPreset('dgx-b200'), 'dgx-b200'));
  assert.equal(libraryChannelCount(b200, b200.accelerators, { ...ring(8), algorithm: 'nvls', protocol: 'Simple' }), 24);
  assert.equal(channelsOf({ ...ring(8), algorithm: 'direct' }), undefined);
});

test('`tsccl sim` on one DGX H100 reports the channels a call runs on, not one for every row', () => {
  const graph = h100;
  const row = (bytes: number, algorithm?: string) =>
    simulateRow(graph, graph.accelerators, {
      op: 'all_reduce',
      bytes,
      mode: 'flow',
      nvls: true,
      elementBytes: 4,
      root: -1,
      algorithm,
    });
  assert.equal(row(8).channels, 1);
  assert.equal(row(1 << 30, 'ring').channels, 32);
  const large = row(1 << 30);
  assert.equal(large.channels, large.algorithm === 'nvls' ? 16 : 32, large.algorithm);
});
