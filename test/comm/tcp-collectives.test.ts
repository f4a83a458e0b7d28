import assert from 'node:assert/strict';
import { test } from 'node:test';
import { ErrorCode, TscclError } from '../../src/errors.js';
import { launchFixture, rankResults } from '../harness/ranks.js';
import { ffiExpected } from '../harness/ffi-expected.js';

// The same matrix as over shared memory, with ranks as processes meeting over TCP on loopback.
// 3 ranks read and write their sockets through node:fs, the others through koffi where it loads.
for (const n of [2, 3, 4]) {
  const title = n === 2 ? ', 2 sockets per peer' : n === 3 ? ', socket calls through node:fs' : '';
  test(`all collectives on ${n} process ranks over TCP${title}`, async () => {
    const { results } = await launchFixture(
      'collectives-rank',
      n,
      { counts: [0, 1, 7, 31], largeCount: n === 2 ? 1 << 18 : 4099, largeDTypes: ['float32'] },
      // 2 ranks: 1 MiB messages striped over 2 sockets per peer; 3 ranks: tiny chunks.
      {
        env: {
          ...process.env,
          TSCCL_CHUNK_BYTES: n === 3 ? '64' : '524288',
          TSCCL_NSOCKS_PERPEER: n === 2 ? '2' : '1',
          TSCCL_SOCKET_CALLS: n === 3 ? 'node' : 'ffi',
        },
      },
    );
    const calls = n === 3 || !ffiExpected ? 'node' : 'ffi';
    for (const [rank, result] of (results as { cases: number; failures: string[]; socketCalls: string }[]).entries()) {
      assert.deepEqual(result.failures, [], `rank ${rank}`);
      assert.ok(result.cases > 400, `rank ${rank} ran only ${result.cases} cases`);
      assert.equal(result.socketCalls, calls, `rank ${rank}'s socket calls`);
    }
  });
}

test('all collectives on 3 process ranks over TCP, one-shot wherever the message fits one frame (TSCCL_PROTO=ll)', async () => {
  const { results } = await launchFixture(
    'collectives-rank',
    3,
    { counts: [0, 1, 7, 31, 300], largeCount: 1100, largeDTypes: ['float32', 'float64'] },
    { env: { ...process.env, TSCCL_PROTO: 'll' } },
  );
  for (const [rank, result] of (results as { cases: number; failures: string[] }[]).entries()) {
    assert.deepEqual(result.failures, [], `rank ${rank}`);
    assert.ok(result.cases > 400, `rank ${rank} ran only ${result.cases} cases`);
  }
});

test('split groups over TCP: 8 process ranks as 2 x 4 TP x DP, running concurrently', async () => {
  const { results } = await launchFixture('split-rank', 8);
  const r5 = results[5] as {
    tp: { rank: number; size: number };
    dp: { rank: number; size: number };
    gathered: number[];
  };
  assert.deepEqual({ rank: r5.tp.rank, size: r5.tp.size }, { rank: 1, size: 4 });
  assert.deepEqual(r5.dp, { rank: 0, size: 2 });
  assert.deepEqual(r5.gathered, [4, 5, 6, 7]);
});

test('a process rank that dies: the others fail with PEER_LOST at once, launch names the rank and its exit code', async () => {
  // PEER_LOST, not the 20 s timeout of their call, shows the death ended their wait. The grace
  // is long enough for a loaded machine to let them report it.
  await assert.rejects(launchFixture('dies-rank', 3, {}, { graceMs: 20_000 }), (err: unknown) => {
    assert.ok(err instanceof TscclError);
    assert.equal(err.code, ErrorCode.RANK_FAILED);
    assert.match(err.message, /^Rank 1 failed: Rank 1 exited with code 7/);
    const ranks = err.details.ranks as { rank: number; result?: { code: string; ms: number; message: string } }[];
    for (const r of [0, 2]) {
      assert.equal(ranks[r].result?.code, ErrorCode.PEER_LOST, JSON.stringify(ranks[r]));
      assert.match(ranks[r].result!.message, /lost its connection to rank 1|rank 1 gave up/);
    }
    return true;
  });
});

test('after a rank dies, launch stops the survivors once its grace period is over, thread ranks of a process too', async () => {
  // The process's own grace (the environment's 60 s) would let rank 0 finish its 50 s; only
  // launch's grace of 300 ms can stop it first, however slowly the machine runs.
  const job = launchFixture(
    'outlives-rank',
    1,
    { ms: 50_000 },
    { threadsPerProc: 2, graceMs: 300, env: { ...process.env, TSCCL_RANK_GRACE_MS: '60000' } },
  );
  const ranks = await rankResults<string>(job);
  assert.deepEqual(ranks, [undefined, undefined]);
});

// Threads of several processes in one communicator: shared memory inside a process, TCP between.
for (const [procs, threads] of [
  [2, 2],
  [3, 2],
]) {
  test(`all collectives on ${procs} processes x ${threads} thread ranks (mixed shared memory and TCP)`, async () => {
    const { results } = await launchFixture(
      'collectives-rank',
      procs,
      { counts: [0, 1, 7, 31], largeCount: 4099, largeDTypes: ['float32'] },
      { threadsPerProc: threads },
    );
    assert.equal(results.length, procs * threads);
    for (const [rank, result] of (results as { cases: number; failures: string[] }[]).entries()) {
      assert.deepEqual(result.failures, [], `rank ${rank}`);
      assert.ok(result.cases > 400, `rank ${rank} ran only ${result.cases} cases`);
    }
  });
}

test('mixed job: 2 processes x 4 threads split as TP (inside a process) x DP (across processes)', async () => {
  const { results } = await launchFixture('split-rank', 2, {}, { threadsPerProc: 4 });
  const all = results as {
    script: unknown;
    world: unknown;
    tp: { rank: number; size: number };
    dp: { rank: number; size: number };
    gathered: number[];
    sums: number[];
  }[];
  assert.equal(all.length, 8);
  all.forEach((r, rank) => {
    assert.deepEqual(r.world, { rank, size: 8 });
    assert.deepEqual(r.script, { rank, size: 8 }, 'the rank and size a script is called with are its place in the job');
    assert.deepEqual({ rank: r.tp.rank, size: r.tp.size }, { rank: rank % 4, size: 4 });
    assert.deepEqual(
      r.gathered,
      [0, 1, 2, 3].map((k) => (rank >> 2) * 4 + k),
    );
    assert.equal(r.sums[1], ((rank & 3) + 4) * 10); // DP max across the two processes, iteration 0
  });
});
