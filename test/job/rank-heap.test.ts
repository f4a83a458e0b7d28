import assert from 'node:assert/strict';
import { test } from 'node:test';
import { processRankHeapFlags } from '../../src/job/rank-heap.js';
import { withEnvAsync } from '../harness/env.js';
import { launchFixture, runFixture } from '../harness/ranks.js';

type YoungGeneration = { limitMb: number | undefined; newSpaceBytes: number; execArgv: string[] };

/** Runs `body` with TSCCL_RANK_YOUNG_GEN_MB set to `setting` (undefined: unset). */
function withSetting<T>(setting: string | undefined, body: () => T | Promise<T>): Promise<T> {
  return withEnvAsync('TSCCL_RANK_YOUNG_GEN_MB', setting, async () => body());
}

async function youngGenerations(setting: string | undefined, ranks: 'threads' | 'processes' = 'threads') {
  const job = ranks === 'threads' ? runFixture : launchFixture;
  return withSetting(setting, async () => (await job('young-generation-rank', 2)).results as YoungGeneration[]);
}

test("thread ranks start with a young generation of TSCCL_RANK_YOUNG_GEN_MB (4 MiB), and V8's own with 0", async () => {
  const capped = await youngGenerations(undefined);
  for (const [rank, young] of capped.entries()) {
    assert.equal(young.limitMb, 4, `rank ${rank}`);
    assert.ok(young.newSpaceBytes <= 4 * 2 ** 20, `rank ${rank}: ${young.newSpaceBytes} bytes of new space`);
  }
  const own = await youngGenerations('0');
  for (const [rank, young] of own.entries()) {
    assert.ok(young.limitMb !== 4, `rank ${rank}: ${young.limitMb}`);
    assert.ok(young.newSpaceBytes > 4 * 2 ** 20, `rank ${rank}: V8's grows past 4 MiB, ${young.newSpaceBytes} bytes`);
  }
  assert.equal((await youngGenerations('8'))[0].limitMb, 8);
});

test('process ranks the launcher starts get the same young generation, as V8 flags, unless their own flags set one', async () => {
  const capped = await youngGenerations(undefined, 'processes');
  for (const [rank, young] of capped.entries()) {
    assert.ok(young.execArgv.includes('--max-semi-space-size=1'), `rank ${rank}: ${young.execArgv.join(' ')}`);
    assert.ok(young.newSpaceBytes <= 4 * 2 ** 20, `rank ${rank}: ${young.newSpaceBytes} bytes of new space`);
  }
  const own = await youngGenerations('0', 'processes');
  for (const [rank, young] of own.entries()) {
    assert.ok(!young.execArgv.some((f) => f.startsWith('--max-semi-space-size')), `rank ${rank}: ${young.execArgv}`);
    assert.ok(young.newSpaceBytes > 4 * 2 ** 20, `rank ${rank}: V8's grows past 4 MiB, ${young.newSpaceBytes} bytes`);
  }
  await withSetting('12', () => {
    // Three semi-spaces make a young generation.
    assert.deepEqual(processRankHeapFlags(['--inspect']), ['--max-semi-space-size=4']);
    assert.deepEqual(processRankHeapFlags(['--max-semi-space-size=64']), []);
    assert.deepEqual(processRankHeapFlags(['--max_semi_space_size', '64']), []);
  });
  await withSetting('2', () => assert.deepEqual(processRankHeapFlags([]), ['--max-semi-space-size=1']));
});
