import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { Fault, RandomFaultsArgs, RandomFaultsReport } from '../fixtures/random-faults-rank.js';
import { launchFixture, rankResults, runFixture } from '../harness/ranks.js';

// Randomized faults among randomized calls (bench/stress/random-faults.mjs runs the same fixture
// longer): every call right or failed with a code its fault explains, every fault seen by every
// live rank, and the shrunk communicator working. A fixed seed: a failure repeats.
const FAULTS: Fault[] = ['none', 'abort', 'signal', 'stall', 'exit'];
// The call timeout is met only by a stall (2.5 timeouts long); calls that must succeed have 3 s on a loaded machine.
const args = (seed: number): RandomFaultsArgs => ({
  rounds: 12,
  calls: 16,
  seed,
  maxLog2: 18,
  timeoutMs: 3000,
  faults: FAULTS,
});
// Survivors finish their rounds after a rank exits on purpose.
const grace = { graceMs: 120_000, timeoutMs: 180_000 };

function check(reports: (RandomFaultsReport | undefined)[]): void {
  const live = reports.filter((r): r is RandomFaultsReport => r !== undefined);
  assert.ok(live.length >= 2, `${live.length} ranks finished`);
  for (const report of live) assert.deepEqual(report.failures, [], report.rounds.join('\n'));
  // The draw met every kind of fault, so the run tested what it claims.
  for (const fault of FAULTS)
    assert.ok(
      live[0].rounds.some((r) => r.includes(`: ${fault} by rank`)),
      `no ${fault} round:\n${live[0].rounds.join('\n')}`,
    );
}

test('random faults among random calls on 4 thread ranks: each call right or failed for a reason, every fault seen, shrink recovers', async () => {
  check(await rankResults<RandomFaultsReport>(runFixture('random-faults-rank', 4, args(5), grace)));
});

test('random faults among random calls on 4 process ranks over TCP', async () => {
  check(await rankResults<RandomFaultsReport>(launchFixture('random-faults-rank', 4, args(6), grace)));
});
