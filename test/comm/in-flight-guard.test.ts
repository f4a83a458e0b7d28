import assert from 'node:assert/strict';
import { test } from 'node:test';
import { rankResults, runFixture } from '../harness/ranks.js';

type Report = { outcomes: string[]; values?: number[] };
const env = { ...process.env, TSCCL_DEBUG_CHECK: '1' };
const job = (scenario: string, progress?: 'engine') =>
  rankResults<Report>(runFixture('in-flight-mutation-rank', 2, { scenario, progress }, { env, graceMs: 20_000 }));

test("under TSCCL_DEBUG_CHECK, writing an out-of-place call's input while it runs fails the call with CHECKSUM, saying so", async () => {
  const [writer] = await job('out-of-place');
  assert.match(
    writer!.outcomes[0],
    /^TSCCL_ERR_CHECKSUM: Rank 0: the input of allReduce #\d+ changed while the call ran/,
  );
});

test("under TSCCL_DEBUG_CHECK, writing a queued call's input before it starts fails it with CHECKSUM", async () => {
  const [writer] = await job('queued');
  assert.equal(writer!.outcomes[0], 'OK');
  assert.match(
    writer!.outcomes[1],
    /^TSCCL_ERR_CHECKSUM: Rank 0: the input of allReduce #\d+ changed between its issue and its start/,
  );
});

test('under TSCCL_DEBUG_CHECK, the same array in place in two queued calls is no error: the first call wrote it', async () => {
  for (const [rank, r] of (await job('same-array-twice')).entries()) {
    assert.deepEqual(r!.outcomes, ['OK', 'OK'], `rank ${rank}`);
    assert.deepEqual(r!.values, [6, 6], `rank ${rank}`);
  }
});

test('under TSCCL_DEBUG_CHECK, a third call on an array a queued call still writes is no error when the first call has ended', async () => {
  for (const [rank, r] of (await job('same-array-thrice')).entries()) {
    assert.deepEqual(r!.outcomes, ['OK', 'OK', 'OK'], `rank ${rank}`);
    assert.deepEqual(r!.values, [12, 12], `rank ${rank}`);
  }
});

test('under TSCCL_DEBUG_CHECK, on a progress engine, writing a staged array while its call runs fails the call with CHECKSUM', async () => {
  const [writer] = await job('staged', 'engine');
  assert.match(
    writer!.outcomes[0],
    /^TSCCL_ERR_CHECKSUM: Rank 0: an array handed to allReduce changed while the call ran/,
  );
});
