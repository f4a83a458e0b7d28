import assert from 'node:assert/strict';
import { test } from 'node:test';
import { defaultProfile } from '../../src/topology/local-profile.js';
import { simulateTimed } from '../../src/tune/timed-call.js';
import { MAX_ONE_SHOT_GBPS, fitOneShotRate } from '../../src/tune/fit-one-shot.js';
import { fakeDetection } from '../fixtures/fake-detection.js';

const detection = fakeDetection(2);
const allReduce = { collective: 'allReduce', ranks: 2, bytes: 32 * 1024, algorithm: 'one_shot', calls: 201 } as const;

/** The 2-rank one-shot all-reduce as the simulator times it with this rate. */
function simulated(oneShotGBps: number): number {
  const base = defaultProfile(2, 'h');
  return simulateTimed({ ...base, shm: { ...base.shm, oneShotGBps } }, detection, { ...allReduce, timeUs: 0 });
}

test('the fitted one-shot rate is the one with which the simulator reproduces the timed all-reduce', () => {
  for (const gbps of [1.5, 4.4, 7]) {
    const fit = fitOneShotRate(defaultProfile(2, 'h'), detection, { ...allReduce, timeUs: simulated(gbps) });
    assert.equal(fit.belowModel, false);
    assert.ok(Math.abs(fit.gbps - gbps) <= gbps * 0.01, `${gbps} GB/s fitted as ${fit.gbps}`);
  }
  assert.ok(simulated(2) > simulated(4), 'a slower path takes longer');
});

test('an all-reduce faster than the model allows at any rate fits as the copy speed and says so', () => {
  const fit = fitOneShotRate(defaultProfile(2, 'h'), detection, {
    ...allReduce,
    timeUs: simulated(MAX_ONE_SHOT_GBPS) / 2,
  });
  assert.deepEqual(fit, { gbps: MAX_ONE_SHOT_GBPS, belowModel: true });
});
