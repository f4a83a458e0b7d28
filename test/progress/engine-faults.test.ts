import assert from 'node:assert/strict';
import { test } from 'node:test';
import { ErrorCode } from '../../src/errors.js';
import type { FaultReport } from '../fixtures/faults-rank.js';
import { withMarks } from '../harness/marks.js';
import { launchFixture, rankResults, runFixture } from '../harness/ranks.js';

/**
 * The fault scenarios of test/comm/faults.test.ts with every rank's calls on its progress
 * engine: the codes, the names and the recovery must be what they are inline.
 */
const jobs = {
  shm: (scenario: string, n: number) =>
    withMarks((marks) =>
      rankResults<FaultReport>(
        runFixture('faults-rank', n, { scenario, marks, processes: false, progress: 'engine' }, { graceMs: 20_000 }),
      ),
    ),
  tcp: (scenario: string, n: number) =>
    withMarks((marks) =>
      rankResults<FaultReport>(
        launchFixture('faults-rank', n, { scenario, marks, processes: true, progress: 'engine' }, { graceMs: 20_000 }),
      ),
    ),
};

for (const [name, job] of Object.entries(jobs)) {
  test(`${name} with engines: abort while the engines hold the peers' all-reduce ends them with ABORTED naming the rank; shrink recovers`, async () => {
    const all = await job('abort', 3);
    for (const [rank, r] of all.entries()) {
      assert.equal(r!.code, ErrorCode.ABORTED, `rank ${rank}: ${r!.message}`);
      if (rank !== 1) assert.match(r!.message, /rank 1 gave up on world at #\d+ with TSCCL_ERR_ABORTED/);
      assert.equal(r!.recovered, 'OK', `rank ${rank}`);
    }
  });

  test(`${name} with engines: a rank that exits after its part of a gather ended does not fail the gather of slower ranks`, async () => {
    const all = await job('exit-after-end', 3);
    for (const rank of [0, 2]) {
      const r = all[rank]!;
      assert.equal(r.code, 'OK', `rank ${rank}: ${r.message}`);
      assert.equal(r.recovered, 'OK', `rank ${rank}`);
    }
  });

  test(`${name} with engines: a rank killed while its engine holds its calls: survivors get PEER_LOST, shrink and go on`, async () => {
    const all = await job('kill-during', 3);
    for (const rank of [0, 1]) {
      const r = all[rank]!;
      assert.equal(r.code, ErrorCode.PEER_LOST, `rank ${rank}: ${r.code} ${r.message}`);
      assert.match(r.message, /rank 2|lost its connection to rank 2/);
      assert.equal(r.recovered, 'OK', `rank ${rank}`);
    }
  });
}
