import assert from 'node:assert/strict';
import { test } from 'node:test';
import { runFixture } from '../harness/ranks.js';

test('8 ranks split as 2 x 4 TP x DP groups run collectives concurrently, each with its own numbering', async () => {
  const { results } = await runFixture('split-rank', 8);
  for (const [r, res] of (
    results as {
      tp: { rank: number; size: number; name: string };
      dp: { rank: number; size: number };
      noneIsNull: boolean;
      noneSize: number;
      sums: number[];
      gathered: number[];
    }[]
  ).entries()) {
    const tpBase = (r >> 2) * 4;
    assert.deepEqual({ rank: res.tp.rank, size: res.tp.size }, { rank: r - tpBase, size: 4 });
    assert.match(res.tp.name, /^world\.split0\.color[01]$/);
    // key = -rank reverses the order inside each DP group.
    assert.deepEqual(res.dp, { rank: r < 4 ? 1 : 0, size: 2 });
    assert.equal(res.noneIsNull, r === 0);
    if (r !== 0) assert.equal(res.noneSize, 7);
    for (let i = 0; i < 20; i++) {
      assert.equal(
        res.sums[2 * i],
        [0, 1, 2, 3].reduce((a, k) => a + tpBase + k + i, 0),
        `tp sum, iteration ${i}`,
      );
      assert.equal(res.sums[2 * i + 1], ((r & 3) + 4) * 10 + i, `dp max, iteration ${i}`);
    }
    assert.deepEqual(res.gathered, [tpBase, tpBase + 1, tpBase + 2, tpBase + 3]);
  }
});

test('communicators made and destroyed in a loop give their staging space back: the arena stops growing', async () => {
  const { results } = await runFixture('split-cycles-rank', 2, { cycles: 40, from: 4, elements: 1 << 20 });
  for (const [r, res] of (results as { grownBytes: number; wrong: number }[]).entries()) {
    assert.equal(res.wrong, 0, `rank ${r}`);
    // 36 communicators x 2 ranks x 4 MiB of staging, had it stayed.
    assert.ok(res.grownBytes < 16 << 20, `rank ${r}: the arena grew by ${res.grownBytes} bytes over 36 communicators`);
  }
});

test('communicators made and destroyed in a loop reuse their mailboxes once every member closed', async () => {
  const { results } = await runFixture('split-cycles-rank', 4, { cycles: 120, from: 10, elements: 8 });
  for (const [r, res] of (results as { grownBytes: number; wrong: number }[]).entries()) {
    assert.equal(res.wrong, 0, `rank ${r}`);
    // Had they stayed: 110 communicators x 4 ranks x a 148 KiB mailbox, 65 MB.
    assert.ok(res.grownBytes < 4 << 20, `rank ${r}: the arena grew by ${res.grownBytes} bytes over 110 communicators`);
  }
});
