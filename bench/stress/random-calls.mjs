#!/usr/bin/env node
// Correctness soak, not a benchmark: the randomized calls of test/fixtures/random-calls-rank.ts
// (drawn from a seed, several in flight at once on the world and on a split half of it, every
// result checked on every rank), for as long and as large as asked, here or over two "hosts".
// As ranks:  tsccl run -n 4 bench/stress/random-calls.mjs [calls=300] [seed=1] [maxLog2=22]
//            tsccl launch --nproc-per-node 3 [--threads-per-proc 2] bench/stress/random-calls.mjs ...
// Over two network namespaces (needs root and iproute2), as bench/stress/netns-reduce-scatter.mjs:
//            node bench/stress/random-calls.mjs --netns [rate=100mbit] [procs=2] [threads=1] [calls] [seed] [maxLog2]
// Catches, e.g., a peer's goodbye on one socket overtaking a striped message on another.
import { fileURLToPath } from 'node:url';
import randomCallsRank from '../../dist/test/fixtures/random-calls-rank.js';
import { createNetnsPair, netnsUnavailable, tscclInNamespace } from '../../dist/test/harness/netns.js';

/** One rank: prints its count of wrong calls and each one; throws if there were any. */
export default async function randomCalls({ rank, args }) {
  const [calls = 300, seed = 1, maxLog2 = 22] = args.map(Number);
  const { calls: made, failures } = await randomCallsRank({ args: [JSON.stringify({ calls, seed, maxLog2 })] });
  console.log(`rank ${rank}: ${failures.length} wrong of ${made} calls${failures.map((f) => `\n  ${f}`).join('')}`);
  if (failures.length > 0) throw new Error(`rank ${rank}: ${failures.length} calls wrong`);
}

// Run directly with --netns (not as a rank, which the launcher gives a RANK): two hosts, then launch.
if (process.env.RANK === undefined && process.argv[2] === '--netns') {
  const [rate = '100mbit', procs = '2', threads = '1', ...rest] = process.argv.slice(3);
  const why = netnsUnavailable();
  if (why) {
    console.error(`random-calls: ${why}`);
    process.exit(2);
  }
  const pair = createNetnsPair('r', rate);
  const node = (i) =>
    tscclInNamespace(
      pair.names[i],
      [
        'launch',
        '--nnodes',
        '2',
        '--node-rank',
        String(i),
        '--nproc-per-node',
        procs,
        '--threads-per-proc',
        threads,
        '--master-addr',
        pair.addresses[0],
        '--master-port',
        '29592',
        fileURLToPath(import.meta.url),
        ...rest,
      ],
      { ...process.env, TSCCL_JOB_TOKEN: 'random-calls' },
      { echo: true },
    );
  try {
    const nodes = await Promise.all([node(0), node(1)]);
    process.exitCode = nodes.every((n) => n.code === 0) ? 0 : 1;
  } finally {
    pair.close();
  }
}
