import assert from 'node:assert/strict';
import { test } from 'node:test';
import { summarizePeerCache } from '../../src/tune/peer-cache.js';

const moment = (peerWrittenGBps: number, ...nsPerByte: number[]) => ({
  peerWrittenGBps,
  invalidationTiers: nsPerByte.map((ns, i) => ({ bytes: 65536 << i, nsPerByte: ns })),
});

test('peer cache: the mean of the moments, the rate of their mean time, and the costliest and cheapest moments whole', () => {
  const summary = summarizePeerCache([moment(20, 0.004, 0.002), moment(10, 0.12, 0.05), moment(20, 0.005, 0.1)]);
  assert.equal(summary.peerWrittenGBps, 15);
  assert.deepEqual(
    summary.invalidationTiers.map((t) => t.bytes),
    [65536, 131072],
  );
  assert.ok(Math.abs(summary.invalidationTiers[0].nsPerByte - 0.043) < 1e-12);
  assert.ok(Math.abs(summary.invalidationTiers[1].nsPerByte - 0.152 / 3) < 1e-12);
  // 0.17 over the tiers, against 0.105 and 0.006: one moment's tiers, not each tier's largest.
  assert.deepEqual(summary.worstInvalidationTiers, moment(10, 0.12, 0.05).invalidationTiers);
  // With that moment's copy of fresh bytes.
  assert.equal(summary.worstPeerWrittenGBps, 10);
  // And the cheapest moment whole: 0.006 over the tiers.
  assert.deepEqual(summary.bestInvalidationTiers, moment(20, 0.004, 0.002).invalidationTiers);
});

test('peer cache: no moment is an error, not a profile of NaN', () => {
  assert.throws(() => summarizePeerCache([]), /no moment of the peer cache/);
});
