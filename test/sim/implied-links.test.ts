import assert from 'node:assert/strict';
import { test } from 'node:test';
import { impliedLinks } from '../../src/sim/implied-links.js';
import { buildPreset } from '../../src/topology/presets/presets.js';
import { TopologyGraph } from '../../src/topology/topology-graph.js';
import type { Topology } from '../../src/topology/topology-schema.js';

const impliedNames = (topology: Topology) => {
  const graph = new TopologyGraph(topology);
  const implied = impliedLinks(graph, graph.capacities);
  const names: string[] = [];
  for (let l = 0; l < graph.linkCount; l++) if (implied?.[l] === 1) names.push(graph.linkName(l));
  return names.sort();
};

test("a non-blocking spine's links never bind: each leaf's uplink and downlink, and nothing else", () => {
  const cluster = buildPreset('hgx-h200', { nodes: 4, nicsPerNode: 8, nicGbps: 400, nicKind: 'ib', fabric: 'rail' });
  const expected = Array.from({ length: 8 }, (_, k) => [`rail${k}.leaf0->spine`, `spine->rail${k}.leaf0`]).flat();
  assert.deepEqual(impliedNames(cluster), expected.sort());
});

test('an oversubscribed spine can bind, and so can the two links of a switch with two ports', () => {
  const cluster = buildPreset('hgx-h200', { nodes: 4, nicsPerNode: 8, nicGbps: 400, nicKind: 'ib', fabric: 'rail' });
  const halved = {
    ...cluster,
    links: cluster.links.map((link) => (link.b === 'spine' ? { ...link, count: link.count / 2 } : link)),
  };
  assert.deepEqual(impliedNames(halved), []);
  // Two GPUs on one NVSwitch: each link's flows are the other's, so neither may stand for the other.
  assert.deepEqual(impliedNames(buildPreset('dgx-h100', { gpus: 2 })), []);
});
