import assert from 'node:assert/strict';
import { test } from 'node:test';
import { ONE_SHOT, oneShotPlan } from '../../src/algorithms/one-shot-plan.js';
import type { Collective } from '../../src/algorithms/schedule.js';
import { simulateFlows } from '../../src/sim/flow-sim.js';
import { defaultProfile } from '../../src/topology/local-profile.js';
import { localTopology } from '../../src/topology/local-topology.js';
import { TopologyGraph } from '../../src/topology/topology-graph.js';
import { parseTopology } from '../../src/topology/topology-schema.js';
import { fakeDetection } from '../fixtures/fake-detection.js';

const RANKS = 4;
const graph = new TopologyGraph(
  parseTopology(
    localTopology({
      ranks: RANKS,
      transport: 'shm',
      profile: defaultProfile(RANKS, 'h'),
      detection: fakeDetection(RANKS),
    }),
    'local',
  ),
);
const carried = (collective: Collective, root = 0) =>
  simulateFlows(graph, graph.accelerators, {
    collective,
    count: 1024,
    elementBytes: 4,
    root,
    algorithm: ONE_SHOT,
    protocol: 'shm',
  }).linkBytes.reduce((a, b) => a + b, 0);
/** Pieces the executor's plans read from peers' slots (a rank's own piece moves nothing). */
const peerReads = (collective: Collective, root = 0) =>
  Array.from(
    { length: RANKS },
    (_, rank) =>
      oneShotPlan({ collective, nranks: RANKS, count: 1024, root, inPlace: false, chunkCount: 0 }, rank).reads.filter(
        (read) => read.peer !== rank,
      ).length,
  ).reduce((a, b) => a + b, 0);

test("the simulator moves the pieces the executor's one-shot plans read, and no others", () => {
  // Every piece is a copy over the same hub, so the bytes carried scale with the pieces read.
  const perPiece = carried('allGather') / peerReads('allGather');
  for (const [collective, root] of [
    ['broadcast', 2],
    ['scatter', 1],
    ['gather', 3],
    ['allToAll', 0],
  ] as const) {
    assert.ok(
      Math.abs(carried(collective, root) / peerReads(collective, root) - perPiece) < 1e-9 * perPiece,
      `${collective}`,
    );
  }
  assert.equal(peerReads('broadcast', 2), RANKS - 1);
  assert.equal(carried('barrier'), 0);
});
