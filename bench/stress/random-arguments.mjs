#!/usr/bin/env node
// Robustness fuzz, not a benchmark: the bad arguments of test/fixtures/random-arguments-rank.ts
// (every public method, buffers and options of every wrong kind, drawn from a seed), for as many
// calls as asked. Every call must end done or with a TscclError, within its timeout.
// As ranks:  tsccl run -n 3 bench/stress/random-arguments.mjs [calls=2000] [seed=1] [timeoutMs=1000]
//            tsccl launch --nproc-per-node 3 [--threads-per-proc 2] bench/stress/random-arguments.mjs ...
// Catches, e.g., a TypeError escaping free(undefined) or a non-root scatter into an output of another type.
import randomArgumentsRank from '../../dist/test/fixtures/random-arguments-rank.js';

/** One rank: prints the codes its calls ended with and every failure; throws if there were any. */
export default async function randomArguments({ rank, args }) {
  const [calls = 2000, seed = 1, timeoutMs = 1000] = args.map(Number);
  const { codes, failures, worldSum } = await randomArgumentsRank({
    args: [JSON.stringify({ calls, seed, timeoutMs })],
  });
  console.log(
    `rank ${rank}: ${failures.length} failures in ${calls} calls ${JSON.stringify(codes)}, world sum ${worldSum}${failures.map((f) => `\n  ${f}`).join('')}`,
  );
  if (failures.length > 0) throw new Error(`rank ${rank}: ${failures.length} calls failed`);
}
