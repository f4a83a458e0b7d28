import assert from 'node:assert/strict';
import { test } from 'node:test';
import { measureCopyTiers } from '../../src/tuner/copy-tiers.js';

const MIB = 2 ** 20;

test('copy tiers: one core alone and every core at once, and one core folding, for each working set asked', async () => {
  const tiers = await measureCopyTiers(2, { tierMib: [1, 2], sampleBytes: 4 * MIB, moments: 2, gapMs: 1 });
  assert.deepEqual(tiers.map((t) => t.bytes), [1 * MIB, 2 * MIB]);
  for (const t of tiers) {
    assert.ok(Number.isFinite(t.copyGBps) && t.copyGBps > 0, `alone ${t.copyGBps}`);
    assert.ok(Number.isFinite(t.allCoresGBps) && t.allCoresGBps > 0, `all cores ${t.allCoresGBps}`);
    assert.ok(Number.isFinite(t.foldGBps) && t.foldGBps > 0, `fold ${t.foldGBps}`);
  }
});

test('copy tiers on one core: no helper threads, both figures measured on the one core', async () => {
  const [tier] = await measureCopyTiers(1, { tierMib: [1], sampleBytes: 2 * MIB, moments: 1 });
  assert.ok(tier.copyGBps > 0 && tier.allCoresGBps > 0);
});
