#!/usr/bin/env node
// Resident memory of a process that launches thread jobs one after another: `jobs` launches of
// an all-gather of `bytes` (the output) by `ranks` thread ranks on buffers from comm.alloc, no
// garbage collection forced between them. Prints the process's resident set after each job.
// Usage: node bench/job-memory.mjs [jobs=3] [ranks=8] [bytes=67108864]
import { isMainThread } from 'node:worker_threads';
import { fileURLToPath } from 'node:url';
import { init } from '../dist/src/comm/init.js';
import { run } from '../dist/src/launch/run.js';

export default async function allGatherRank({ args }) {
  const comm = await init({ timeoutMs: 600_000 });
  const total = Number(args[0]) / 4;
  const output = comm.alloc('float32', total);
  const input = comm.alloc('float32', total / comm.size).fill(comm.rank);
  await comm.allGather(input, { output });
  await comm.destroy();
}

if (isMainThread && process.argv[1] === fileURLToPath(import.meta.url)) {
  const [jobs = 3, ranks = 8, bytes = 64 << 20] = process.argv.slice(2).map(Number);
  const mib = (n) => (n / 2 ** 20).toFixed(0);
  for (let job = 1; job <= jobs; job++) {
    const start = performance.now();
    await run({ ranks, script: fileURLToPath(import.meta.url), args: [String(bytes)], output: 'inherit' });
    console.log(
      `job ${job}: ${ranks} ranks, all-gather of ${mib(bytes)} MiB, ${(performance.now() - start).toFixed(0)} ms; resident ${mib(process.memoryUsage().rss)} MiB`,
    );
  }
}
