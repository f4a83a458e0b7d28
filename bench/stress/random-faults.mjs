#!/usr/bin/env node
// Correctness soak, not a benchmark: the randomized faults of test/fixtures/random-faults-rank.ts
// (each round, randomized calls in flight while one drawn rank aborts, fires a call's
// AbortSignal, stalls past the call timeout or exits; every call must be right or fail with a
// code its fault explains, every live rank must see the fault, then the survivors shrink and go
// on), for as many rounds as asked. Victims exit on purpose, so this drives the job itself.
// Usage: node bench/stress/random-faults.mjs [--procs | --mixed] [ranks=4] [rounds=40] [calls=24] [seed=1] [maxLog2=20] [timeoutMs]
// (--procs: process ranks over TCP; --mixed: processes of 2 thread ranks each)
// Catches, e.g., a peer's failure after it had ended a collective failing that collective on
// slower ranks (the gather test in test/comm/faults.test.ts).
import { launch } from '../../dist/src/launch/launch.js';
import { run } from '../../dist/src/launch/run.js';
import { rankResults } from '../../dist/test/harness/ranks.js';

const mode = ['--procs', '--mixed'].includes(process.argv[2]) ? process.argv[2] : undefined;
// A rank prepares a batch's data and expected results between batches, on its own thread, while
// peers may already wait for it: the call timeout must cover that (default: 1 s per MiB of the
// largest size, at least 1 s).
const [ranks = 4, rounds = 40, calls = 24, seed = 1, maxLog2 = 20, timeoutMs = 1000 * 2 ** Math.max(0, maxLog2 - 20)] =
  process.argv.slice(mode ? 3 : 2).map(Number);
const script = new URL('../../dist/test/fixtures/random-faults-rank.js', import.meta.url).href;
const args = [
  JSON.stringify({ rounds, calls, seed, maxLog2, timeoutMs, faults: ['none', 'abort', 'signal', 'stall', 'exit'] }),
];
const common = { script, args, output: 'silent', graceMs: 3_600_000, timeoutMs: 3_600_000 };
const started = performance.now();
const job =
  mode === '--procs'
    ? launch({ ...common, nprocPerNode: ranks, mode: 'processes' })
    : mode === '--mixed'
      ? launch({ ...common, nprocPerNode: ranks / 2, threadsPerProc: 2 })
      : run({ ...common, ranks });
const reports = await rankResults(job);
let wrong = 0;
for (const [rank, report] of reports.entries()) {
  if (report === undefined) {
    console.log(`rank ${rank}: exited (a victim)`);
    continue;
  }
  wrong += report.failures.length;
  console.log(
    `rank ${rank}: ${report.failures.length} failures in ${report.rounds.length} rounds${report.failures.map((f) => `\n  ${f}`).join('')}`,
  );
}
const live = reports.find((r) => r !== undefined);
if (live) console.log(live.rounds.map((r) => `  ${r}`).join('\n'));
console.log(`${((performance.now() - started) / 1000).toFixed(1)} s; ${wrong} failures`);
process.exitCode = wrong > 0 || live === undefined ? 1 : 0;
