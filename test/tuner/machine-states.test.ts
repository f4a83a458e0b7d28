import assert from 'node:assert/strict';
import { test } from 'node:test';
import { defaultProfile } from '../../src/topology/local-profile.js';
import { localTopology } from '../../src/topology/local-topology.js';
import { TopologyGraph } from '../../src/topology/topology-graph.js';
import { parseTopology } from '../../src/topology/topology-schema.js';
import { leastWorstRegret, machineStates } from '../../src/tuner/machine-states.js';
import { fakeDetection } from '../fixtures/fake-detection.js';

test('least worst regret: the fastest with one state; with two, the candidate never far behind', () => {
  assert.equal(leastWorstRegret([[10, 8, 9]]), 1);
  // Candidate 0 is 1.15x ahead in the first state and 1.8x behind in the second; 1 is the other way round.
  assert.equal(
    leastWorstRegret([
      [87, 100],
      [184, 101],
    ]),
    1,
  );
  assert.equal(
    leastWorstRegret([
      [80, 100],
      [100, 101],
    ]),
    0,
  );
  // Ties go to the earlier candidate.
  assert.equal(
    leastWorstRegret([
      [5, 5],
      [7, 7],
    ]),
    0,
  );
});

test('machine states: a profile without a costliest moment is one state; with one, the second carries its tiers and its copy of fresh bytes', () => {
  const detection = fakeDetection(2);
  const base = defaultProfile(2, 'h');
  const graphOf = (shm: typeof base.shm) =>
    new TopologyGraph(
      parseTopology(localTopology({ ranks: 2, transport: 'shm', profile: { ...base, shm }, detection }), 'local'),
    );
  const one = graphOf(base.shm);
  assert.deepEqual(machineStates(one), [one]);
  const worst = [{ bytes: 65536, nsPerByte: 0.12 }];
  const two = graphOf({ ...base.shm, worstInvalidationTiers: worst });
  const states = machineStates(two);
  assert.equal(states.length, 2);
  assert.equal(states[0], two);
  assert.deepEqual(states[1].topology.protocols?.[0].invalidationTiers, worst);
  assert.deepEqual(two.topology.protocols?.[0].invalidationTiers, base.shm.invalidationTiers);
  // Built once per machine.
  assert.equal(machineStates(two)[1], states[1]);
  // Without the moment's copy rate the mean's stands; with it, the second state copies fresh bytes at it.
  assert.equal(states[1].topology.protocols?.[0].freshReadGBps, two.topology.protocols?.[0].freshReadGBps);
  const slow = machineStates(graphOf({ ...base.shm, worstInvalidationTiers: worst, worstPeerWrittenGBps: 16 }));
  assert.equal(slow[1].topology.protocols?.[0].freshReadGBps, 16);
  assert.equal(slow[0].topology.protocols?.[0].freshReadGBps, base.shm.peerWrittenGBps);
});
