import assert from 'node:assert/strict';
import { test } from 'node:test';
import { timeSmallCalls } from '../../src/tune/small-calls.js';

test('small calls: 2 thread ranks time several calls in one job, each a positive us per call', async () => {
  const times = await timeSmallCalls(
    [
      { op: 'all_reduce', bytes: 8, algorithm: 'recursive_doubling' },
      { op: 'all_reduce', bytes: 8, algorithm: 'ring' },
      { op: 'broadcast', bytes: 32 * 1024, algorithm: 'one_shot' },
    ],
    { procs: false, blocks: 3, minCalls: 5, warmupCalls: 20, timeoutMs: 60_000 },
  );
  assert.equal(times.length, 3);
  for (const us of times) assert.ok(us > 0 && us < 100_000, `${us} us`);
});

test('small calls: a call the transport refuses is an internal error naming it', async () => {
  // 1 MiB is past the one-shot slot: every rank refuses it before anything moves.
  await assert.rejects(
    timeSmallCalls([{ op: 'broadcast', bytes: 1 << 20, algorithm: 'one_shot' }], {
      procs: false,
      blocks: 1,
      minCalls: 1,
      warmupCalls: 1,
      timeoutMs: 60_000,
    }),
    (error: { code?: string; message?: string }) =>
      error.code === 'TSCCL_ERR_INTERNAL' && /broadcast of 1048576 B by one_shot/.test(error.message ?? ''),
  );
});
