import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { RandomArgumentsArgs, RandomArgumentsReport } from '../fixtures/random-arguments-rank.js';
import { launchFixture, rankResults, runFixture } from '../harness/ranks.js';

// Bad arguments of every kind to every public method, drawn from a fixed seed (a failure
// repeats): every call done or refused with a TscclError, none hanging past its timeout, and
// the world working after all of them.
// Seeds 11 and 6 both met the two bugs the fuzz found (free(undefined), a non-root scatter's output type) by call 500.
const args = (seed: number): RandomArgumentsArgs => ({ seed, calls: 500, timeoutMs: 1000 });

function check(reports: (RandomArgumentsReport | undefined)[]): void {
  for (const [rank, report] of reports.entries()) {
    assert.ok(report !== undefined, `rank ${rank} returned nothing`);
    assert.deepEqual(report.failures, [], `rank ${rank}`);
    assert.equal(report.worldSum, (reports.length * (reports.length + 1)) / 2, `rank ${rank}`);
    // The draw made calls that worked and calls that were refused, so the run tested what it claims.
    assert.ok(
      (report.codes.OK ?? 0) >= 10 && (report.codes.TSCCL_ERR_INVALID_ARGUMENT ?? 0) >= 50,
      `rank ${rank}: ${JSON.stringify(report.codes)}`,
    );
  }
}

test('random bad arguments on 3 thread ranks: each call done or refused with a TscclError, and the world still works', async () => {
  check(await rankResults<RandomArgumentsReport>(runFixture('random-arguments-rank', 3, args(11))));
});

test('random bad arguments on 3 process ranks over TCP', async () => {
  check(await rankResults<RandomArgumentsReport>(launchFixture('random-arguments-rank', 3, args(6))));
});
