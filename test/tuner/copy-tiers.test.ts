import assert from 'node:assert/strict';
import { test } from 'node:test';
import { measureCopyTiers } from '../../src/tuner/copy-tiers.js';

const MIB = 2 ** 20;

test('copy tiers: one core alone and every core at once, for each working set asked', async () => {
  const tiers = await measureCopyTiers(2, [1, 2], 4 * MIB);
  assert.deepEqual(tiers.map((t) => t.bytes), [1 * MIB, 2 * MIB]);
  for (const t of tiers) {
    assert.ok(Number.isFinite(t.copyGBps) && t.copyGBps > 0, `alone ${t.copyGBps}`);
    assert.ok(Number.isFinite(t.allCoresGBps) && t.allCoresGBps > 0, `all cores ${t.allCoresGBps}`);
  }
});

test('copy tiers on one core: no helper threads, both figures measured on the one core', async () => {
  const [tier] = await measureCopyTiers(1, [1], 2 * MIB);
  assert.ok(tier.copyGBps > 0 && tier.allCoresGBps > 0);
});
