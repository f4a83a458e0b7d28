import assert from 'node:assert/strict';
import { test } from 'node:test';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ErrorCode } from '../../src/errors.js';
import type { FaultReport } from '../fixtures/faults-rank.js';
import { withEnvAsync } from '../harness/env.js';
import { withMarks } from '../harness/marks.js';
import { launchFixture, rankResults, runFixture } from '../harness/ranks.js';

type Outcome = { waited: string; first: number; last: number; ranOn: string };

/** What test/fixtures/auto-progress-rank.ts returns of a rank. */
type AutoProgressResult = {
  handOffUs: number;
  paths: string[];
  halfHandOffUs: number;
  halfPaths: string[];
  ran: { chosen: string; recorded: string[]; sum: number }[];
  engineSeqs: number[];
  inlineSeqs: number[];
};

/** Runs `body` with TSCCL_ENGINE_HANDOFF_US set for the ranks it starts (threads and processes copy the environment). */
function withHandOff<T>(us: number, body: () => Promise<T>): Promise<T> {
  return withEnvAsync('TSCCL_ENGINE_HANDOFF_US', String(us), body);
}

test("progress 'auto': a 4 MiB all-reduce goes to the engine, so a rank that blocks its thread still lets its peer finish", async () => {
  const { results } = await withHandOff(200, () =>
    runFixture('blocked-rank-overlap-rank', 2, { progress: 'auto', waitMs: 60_000 }),
  );
  const [blocked, peer] = results as Outcome[];
  assert.deepEqual([blocked.ranOn, peer.ranOn], ['engine', 'engine']);
  assert.equal(blocked.waited, 'ok', 'rank 1 did not finish while rank 0 was blocked');
  for (const r of [blocked, peer]) assert.deepEqual([r.first, r.last], [3, 3]);
});

test("progress 'auto': every rank measures, then agrees on one hand-off and one cut per collective; a split half keeps it; the user's calls are #1 on both paths", async () => {
  const { results } = await runFixture('auto-progress-rank', 3);
  const all = results as AutoProgressResult[];
  for (const [rank, r] of all.entries()) {
    assert.ok(r.handOffUs > 0, `rank ${rank}: hand-off ${r.handOffUs}`);
    assert.equal(r.handOffUs, all[0].handOffUs, `rank ${rank}`);
    assert.deepEqual(r.paths, all[0].paths, `rank ${rank}`);
    // Inline below the cut, engine from it on: the predicted time grows with the size, and no
    // hand-off between threads is as short as a byte's all-reduce nor as long as 64 MiB's.
    for (const path of r.paths) assert.match(path, /^i+e+$/, `rank ${rank}: ${path}`);
    // Each call ran where the tuner sent it, and only there, with the right sums.
    for (const call of r.ran) {
      assert.deepEqual(call.recorded, [call.chosen], `rank ${rank}`);
      assert.equal(call.sum, 6, `rank ${rank}`);
    }
    assert.equal(r.ran[0].chosen, 'inline', `rank ${rank}: a 32 B all-reduce`);
    // The hand-off rounds ran on siblings: the user's first call on each path is #1.
    assert.deepEqual([r.inlineSeqs, r.engineSeqs], [[1], [1]], `rank ${rank}`);
  }
  // The two ranks of the even half (world ranks 0 and 2) have a twin of their own; rank 1 is alone.
  assert.equal(all[0].halfHandOffUs, all[0].handOffUs);
  assert.deepEqual(all[2].halfPaths, all[0].halfPaths);
  assert.equal(all[1].halfHandOffUs, undefined);
  assert.deepEqual(all[1].halfPaths, ['e'.repeat(27), 'e'.repeat(27), 'e'.repeat(27)]);
});

test("progress 'auto': random calls of every size on 3 thread ranks, inline and on the engine in one stream, on the world and a split half at once", async () => {
  const { results } = await withHandOff(200, () =>
    runFixture('random-calls-rank', 3, { calls: 40, seed: 7, maxLog2: 18, progress: 'auto' }, { timeoutMs: 180_000 }),
  );
  for (const [rank, result] of (results as { calls: number; failures: string[] }[]).entries()) {
    assert.deepEqual(result.failures, [], `rank ${rank}`);
    assert.equal(result.calls, [80, 40, 80][rank], `rank ${rank}`);
  }
});

test("progress 'auto' on process ranks over TCP: a 4 MiB all-reduce goes to the engine, which serves the sockets while a rank blocks its thread", async () => {
  const dir = mkdtempSync(join(tmpdir(), 'tsccl-auto-'));
  try {
    const { results } = await withHandOff(200, () =>
      launchFixture('blocked-rank-overlap-rank', 2, { progress: 'auto', flagDir: dir, waitMs: 60_000 }),
    );
    const [blocked, peer] = results as Outcome[];
    assert.deepEqual([blocked.ranOn, peer.ranOn], ['engine', 'engine']);
    assert.equal(blocked.waited, 'ok', 'rank 1 did not finish while rank 0 was blocked');
    for (const r of [blocked, peer]) assert.deepEqual([r.first, r.last], [3, 3]);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test("progress 'auto' on 3 process ranks over TCP: random calls inline (a TCP mesh of the rank's own) and on the engine, on the world and a split half", async () => {
  const { results } = await withHandOff(200, () =>
    launchFixture(
      'random-calls-rank',
      3,
      { calls: 30, seed: 11, maxLog2: 18, progress: 'auto' },
      { timeoutMs: 180_000 },
    ),
  );
  for (const [rank, result] of (results as { calls: number; failures: string[] }[]).entries()) {
    assert.deepEqual(result.failures, [], `rank ${rank}`);
    assert.equal(result.calls, [60, 30, 60][rank], `rank ${rank}`);
  }
});

test("progress 'auto' on threads of 2 processes: small calls run inline over shared memory and TCP at once, large ones on the engine; a split across the processes keeps the cut", async () => {
  // 4 ranks on 2 processes: the tuner prices a 32 B all-reduce at 200-300 us there, a 4 MiB one at ms.
  const { results } = await withHandOff(1000, () => launchFixture('auto-progress-rank', 2, {}, { threadsPerProc: 2 }));
  const all = results as AutoProgressResult[];
  assert.equal(all.length, 4);
  for (const [rank, r] of all.entries()) {
    assert.equal(r.handOffUs, 1000, `rank ${rank}`);
    assert.deepEqual(r.paths, all[0].paths, `rank ${rank}`);
    for (const path of r.paths) assert.match(path, /^i+e+$/, `rank ${rank}: ${path}`);
    assert.deepEqual(
      r.ran.map((call) => [call.chosen, call.recorded, call.sum]),
      [
        ['inline', ['inline'], 10],
        ['engine', ['engine'], 10],
      ],
      `rank ${rank}`,
    );
    assert.deepEqual([r.inlineSeqs, r.engineSeqs], [[1], [1]], `rank ${rank}`);
    // Each half (world ranks 0 and 2, 1 and 3) has one thread in each process.
    assert.equal(r.halfHandOffUs, 1000, `rank ${rank}`);
    assert.deepEqual(r.halfPaths, all[rank % 2].halfPaths, `rank ${rank}`);
    for (const path of r.halfPaths) assert.match(path, /^i+e+$/, `rank ${rank}: ${path}`);
  }
});

test("progress 'auto' on threads of 2 processes: random calls inline and on the engine, on the world and a split half", async () => {
  const { results } = await withHandOff(200, () =>
    launchFixture(
      'random-calls-rank',
      2,
      { calls: 30, seed: 13, maxLog2: 18, progress: 'auto' },
      { threadsPerProc: 2, timeoutMs: 180_000 },
    ),
  );
  const all = results as { calls: number; failures: string[] }[];
  assert.equal(all.length, 4);
  for (const [rank, result] of all.entries()) {
    assert.deepEqual(result.failures, [], `rank ${rank}`);
    assert.equal(result.calls, 60, `rank ${rank}`);
  }
});

test("progress 'auto' on threads of 2 processes: an abort on one rank ends every rank's inline call with ABORTED naming it, and shrink recovers", async () => {
  // The hand-off is pinned above the 16 B call's predicted time (200-300 us on this layout), so
  // it runs inline however fast a loaded machine measures the engine's hand-off.
  const all = await withHandOff(1000, () =>
    withMarks((marks) =>
      rankResults<FaultReport>(
        launchFixture(
          'faults-rank',
          2,
          { scenario: 'abort', marks, processes: true, progress: 'auto' },
          { threadsPerProc: 2, graceMs: 20_000 },
        ),
      ),
    ),
  );
  assert.equal(all.length, 4);
  for (const [rank, r] of all.entries()) {
    assert.equal(r!.code, ErrorCode.ABORTED, `rank ${rank}: ${r!.message}`);
    if (rank !== 1)
      assert.match(r!.message, /rank 1 gave up on world\/inline at #\d+ with TSCCL_ERR_ABORTED/, `rank ${rank}`);
    assert.equal(r!.recovered, 'OK', `rank ${rank}`);
  }
});
