import assert from 'node:assert/strict';
import { test } from 'node:test';
import { foldChannels } from '../../src/sim/channel-symmetry.js';
import { simulateFlows } from '../../src/sim/flow-sim.js';
import type { SimCall } from '../../src/sim/sim-call.js';
import { buildPreset } from '../../src/topology/presets/presets.js';
import { TopologyGraph } from '../../src/topology/topology-graph.js';

const call = (collective: SimCall['collective'], algorithm: string, protocol: string, count: number): SimCall => ({
  collective,
  count,
  elementBytes: 4,
  root: 0,
  algorithm,
  protocol,
});

test('a walk of one channel per class on folded links gives what walking every channel gives, time and link bytes', () => {
  const graph = new TopologyGraph(buildPreset('hgx-h200', { nodes: 4, nicsPerNode: 8, nicGbps: 400, nicKind: 'ib' }));
  const cases: SimCall[] = [
    call('allReduce', 'tree', 'LL128', 2 ** 22),
    call('allReduce', 'ring', 'Simple', 2 ** 22),
    call('allGather', 'ring', 'LL', 2 ** 14),
    call('reduceScatter', 'ring', 'Simple', 2 ** 16),
  ];
  for (const c of cases) {
    const folded = simulateFlows(graph, graph.accelerators, c);
    const full = simulateFlows(graph, graph.accelerators, { ...c, everyChannel: true });
    const label = `${c.collective} ${c.algorithm} ${c.protocol}`;
    assert.ok(
      Math.abs(folded.timeUs - full.timeUs) <= 1e-9 * full.timeUs,
      `${label}: ${folded.timeUs} vs ${full.timeUs}`,
    );
    assert.equal(folded.channels, full.channels, label);
    // hgx-h200's 8 NICs give 8 rings, each the last turned by one GPU: one walked per class.
    assert.equal(full.walkedChannels, full.channels, label);
    assert.equal(folded.walkedChannels, c.algorithm === 'tree' ? 2 : 1, label);
    let moved = 0;
    for (let link = 0; link < full.linkBytes.length; link++) {
      const want = full.linkBytes[link];
      moved += want;
      assert.ok(Math.abs(folded.linkBytes[link] - want) <= 1e-6 * Math.max(1, want), `${label}: link ${link}`);
    }
    assert.ok(moved > 0, label);
  }
});

// Two rings over four ranks, the second the first turned by two places. Rank r sends to the
// next over its own link r and then link 4, which every message crosses (a switch's port).
const turnedRings = (capacities: number[]) => ({
  rings: [
    [0, 1, 2, 3],
    [2, 3, 0, 1],
  ],
  classes: [[0, 1]],
  pairs: [
    [0, 1],
    [1, 2],
    [2, 3],
    [3, 0],
  ] as [number, number][],
  route: (from: number) => Int32Array.of(from, 4),
  sameDelay: () => true,
  sameRank: () => true,
  capacities: Float64Array.from(capacities),
});

test('links that are images of each other fold onto one, at their orbit size over the channels times a link', () => {
  const fold = foldChannels(turnedRings([1, 1, 1, 1, 8]));
  assert.ok(fold !== undefined);
  // Orbits {0, 2} and {1, 3} keep a link's capacity (2 links over 2 channels); link 4 is its own
  // image, so both channels' traffic crosses it and the folded walk, one channel, gets half of it.
  assert.deepEqual(Array.from(fold.capacities), [1, 1, 0, 0, 4]);
  assert.deepEqual(Array.from(fold.fold(Int32Array.of(3, 4))), [1, 4]);
  // What the walked channel moved over an orbit, every real link of it carried once per channel over its size.
  assert.deepEqual(Array.from(fold.unfold(Float64Array.of(10, 20, 0, 0, 30))), [10, 20, 10, 20, 60]);
});

test('channels are walked in full when the permutation does not keep a link capacity, a rank or a delay', () => {
  assert.ok(foldChannels(turnedRings([1, 1, 1, 1, 8])) !== undefined);
  assert.equal(foldChannels(turnedRings([1, 1, 2, 1, 8])), undefined);
  assert.equal(foldChannels({ ...turnedRings([1, 1, 1, 1, 8]), sameRank: (a) => a !== 2 }), undefined);
  assert.equal(foldChannels({ ...turnedRings([1, 1, 1, 1, 8]), sameDelay: () => false }), undefined);
  // No one permutation takes the first ring to the second and the second back to the first.
  assert.equal(
    foldChannels({
      ...turnedRings([1, 1, 1, 1, 8]),
      rings: [
        [0, 1, 2, 3],
        [1, 2, 3, 0],
      ],
    }),
    undefined,
  );
});
