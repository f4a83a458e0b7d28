import assert from 'node:assert/strict';
import { test } from 'node:test';
import { CopyTierSampler } from '../../src/tune/copy-tiers.js';

const MIB = 2 ** 20;

test('copy tiers: one core alone and every core at once, and one core folding, for each working set asked, over every burst', async () => {
  const sampler = new CopyTierSampler(2, { tierMib: [1, 2], sampleBytes: 4 * MIB });
  assert.throws(() => sampler.tiers(), /no moment/);
  await sampler.burst(2, 1);
  await sampler.burst(1, 1);
  const tiers = sampler.tiers();
  assert.deepEqual(
    tiers.map((t) => t.bytes),
    [1 * MIB, 2 * MIB],
  );
  for (const t of tiers) {
    assert.ok(Number.isFinite(t.copyGBps) && t.copyGBps > 0, `alone ${t.copyGBps}`);
    assert.ok(Number.isFinite(t.allCoresGBps) && t.allCoresGBps > 0, `all cores ${t.allCoresGBps}`);
    assert.ok(Number.isFinite(t.foldGBps) && t.foldGBps > 0, `fold ${t.foldGBps}`);
  }
});

test('copy tiers on one core: no helper threads, both figures measured on the one core', async () => {
  const sampler = new CopyTierSampler(1, { tierMib: [1], sampleBytes: 2 * MIB });
  await sampler.burst(1);
  const [tier] = sampler.tiers();
  assert.ok(tier.copyGBps > 0 && tier.allCoresGBps > 0);
});
