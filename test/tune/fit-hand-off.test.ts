import assert from 'node:assert/strict';
import { test } from 'node:test';
import { defaultProfile } from '../../src/topology/local-profile.js';
import { fitOversubscribedHandOff } from '../../src/tune/fit-hand-off.js';
import { simulateTimed } from '../../src/tune/timed-call.js';
import { fakeDetection } from '../fixtures/fake-detection.js';

const detection = fakeDetection(2);
const ring = { collective: 'reduceScatter', ranks: 4, bytes: 1 << 20, algorithm: 'ring', calls: 21 } as const;

/** The 4-rank ring on 2 cores as the simulator times it with this hand-off. */
function simulatedRing(handOffUs: number): number {
  const base = defaultProfile(2, 'h');
  return simulateTimed({ ...base, shm: { ...base.shm, oversubscribedMessageUs: handOffUs } }, detection, {
    ...ring,
    timeUs: 0,
  });
}

test('the fitted oversubscribed hand-off is the one with which the simulator reproduces the timed ring', () => {
  for (const handOffUs of [10, 70, 400]) {
    const timeUs = simulatedRing(handOffUs);
    const fit = fitOversubscribedHandOff(defaultProfile(2, 'h'), detection, { ...ring, timeUs });
    assert.equal(fit.belowModel, false);
    assert.ok(
      Math.abs(fit.handOffUs - handOffUs) <= Math.max(0.2, handOffUs * 0.002),
      `${handOffUs} us fitted as ${fit.handOffUs}`,
    );
  }
});

test('a ring faster than the model allows with no hand-off fits as 0 and says so', () => {
  const fit = fitOversubscribedHandOff(defaultProfile(2, 'h'), detection, { ...ring, timeUs: simulatedRing(0) / 2 });
  assert.deepEqual(fit, { handOffUs: 0, belowModel: true });
});
