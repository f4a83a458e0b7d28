import assert from 'node:assert/strict';
import { test } from 'node:test';
import { availableParallelism } from 'node:os';
import { warmUpLimitMs } from '../../src/comm/warm-up.js';
import { ErrorCode } from '../../src/errors.js';
import type { FaultReport } from '../fixtures/faults-rank.js';
import type { WarmUpRankReport } from '../fixtures/warm-up-rank.js';
import { launchFixture, rankResults, runFixture } from '../harness/ranks.js';

/**
 * Init's warm-up runs on a private communicator: the world's numbering and records start at #1
 * as before, every rank stops at the same call, and a rank that dies while the others are in
 * init fails them with PEER_LOST naming it, never a hang (their calls time out after 30 s, so a
 * failure reported as PEER_LOST ended the wait).
 */
const jobs = [
  ['thread ranks', runFixture],
  ['process ranks', launchFixture],
] as const;

/** Long enough that the warm-up always runs all its calls, however loaded the machine. */
const warmUpOn = { ...process.env, TSCCL_WARMUP_MS: '60000' };

test('the warm-up may take longer as far as the busy threads outnumber the cores', () => {
  assert.equal(warmUpLimitMs(1000, 2, 2), 1000);
  assert.equal(warmUpLimitMs(1000, 1, 8), 1000, 'fewer threads than cores: the budget itself');
  assert.equal(warmUpLimitMs(1000, 4, 2), 2000);
  assert.equal(warmUpLimitMs(1000, 8, 2), 4000);
  assert.equal(warmUpLimitMs(1000, 3, 0), 3000, 'no core reported: counted as one');
});

for (const [name, launch] of jobs) {
  test(`${name}: init warms up on its own communicator; the world's first call is #1`, async () => {
    const { results } = await launch(
      'warm-up-rank',
      3,
      { scenario: 'first-call' },
      {
        env: warmUpOn,
      },
    );
    const reports = results as WarmUpRankReport[];
    for (const [rank, r] of reports.entries()) {
      assert.equal(r.sum, 6, `rank ${rank}'s all-reduce`);
      assert.deepEqual(r.seqs, [1], `rank ${rank}'s world records`);
      assert.ok(r.warmUp !== undefined && r.warmUp.calls > 0, `rank ${rank} warmed up`);
      assert.equal(r.warmUp.cut, false, `rank ${rank} ran every warm-up call within 60 s`);
      assert.equal(r.machineThreads, 3, `rank ${rank} counts the 3 ranks on this machine`);
      assert.equal(r.warmUp.limitMs, warmUpLimitMs(60_000, 3, availableParallelism()), `rank ${rank}'s limit`);
    }
    assert.equal(new Set(reports.map((r) => r.warmUp?.calls)).size, 1, 'every rank stopped at the same call');
  });

  test(`${name}: TSCCL_WARMUP_MS=0 turns the warm-up off`, async () => {
    const { results } = await launch(
      'warm-up-rank',
      2,
      { scenario: 'first-call' },
      {
        env: { ...process.env, TSCCL_WARMUP_MS: '0' },
      },
    );
    for (const r of results as WarmUpRankReport[]) {
      assert.equal(r.warmUp, undefined);
      assert.deepEqual(r.seqs, [1]);
    }
  });
}

test('thread ranks: a rank that dies while the others are in init fails them with PEER_LOST naming it', async () => {
  const reports = await rankResults<FaultReport>(
    runFixture('warm-up-rank', 3, { scenario: 'rank-1-dies' }, { graceMs: 20_000, env: warmUpOn }),
  );
  for (const rank of [0, 2]) {
    const r = reports[rank]!;
    assert.equal(r.code, ErrorCode.PEER_LOST, `rank ${rank}: ${r.code} ${r.message}`);
    assert.match(r.message, /rank 1\b/, `rank ${rank} names rank 1: ${r.message}`);
    assert.doesNotMatch(r.message, /shrink|exclude it/, `init's failure speaks of no shrink: ${r.message}`);
  }
});

for (const [retries, outcome] of [
  ['1', 'is run again over new connections, and init succeeds on both sides'],
  ['0', 'fails init on both sides with PEER_LOST (TSCCL_OP_RETRIES=0)'],
] as const) {
  test(`process ranks: a connection cut in the middle of init's warm-up ${outcome}`, async () => {
    // Rank 1's 63rd frame of the first warm-up mesh (the world's own sends none before init
    // returns); once, as a link that breaks once: the meshes a call is run again over are not cut.
    // Frames between processes of one machine carry no checksum, so they are not kept and the
    // socket cannot go on where it broke: the call fails on both sides, and is run again if allowed.
    const reports = await rankResults<FaultReport>(
      launchFixture(
        'warm-up-rank',
        2,
        { scenario: 'fails' },
        {
          graceMs: 20_000,
          env: { ...warmUpOn, TSCCL_TEST_FAULT: 'cutonce@1#63', TSCCL_OP_RETRIES: retries },
        },
      ),
    );
    assert.equal(reports.length, 2);
    for (const [rank, r] of reports.entries()) {
      if (retries === '1') {
        assert.equal(r?.code, 'OK', `rank ${rank}: ${r?.code} ${r?.message}`);
        continue;
      }
      assert.equal(r?.code, ErrorCode.PEER_LOST, `rank ${rank}: ${r?.code} ${r?.message}`);
      assert.match(r.message, new RegExp(`rank ${1 - rank}\\b`), `rank ${rank} names its peer: ${r.message}`);
      assert.doesNotMatch(r.message, /shrink|exclude it/, `init's failure speaks of no shrink: ${r.message}`);
    }
  });
}
