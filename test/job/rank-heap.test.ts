import assert from 'node:assert/strict';
import { test } from 'node:test';
import { runFixture } from '../harness/ranks.js';

type YoungGeneration = { limitMb: number | undefined; newSpaceBytes: number };

async function youngGenerations(setting: string | undefined): Promise<YoungGeneration[]> {
  const before = process.env.TSCCL_RANK_YOUNG_GEN_MB;
  if (setting === undefined) delete process.env.TSCCL_RANK_YOUNG_GEN_MB;
  else process.env.TSCCL_RANK_YOUNG_GEN_MB = setting;
  try {
    return (await runFixture('young-generation-rank', 2)).results as YoungGeneration[];
  } finally {
    if (before === undefined) delete process.env.TSCCL_RANK_YOUNG_GEN_MB;
    else process.env.TSCCL_RANK_YOUNG_GEN_MB = before;
  }
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
