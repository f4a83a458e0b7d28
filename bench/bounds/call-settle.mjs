// How a small all-reduce speeds up call after call in a fresh job: the median call of every
// block of calls, in us. The settling is V8 optimising the call path, not the machine: run under
// `node --no-opt --no-maglev` (no optimising compiler) it stays at its first speed, and under
// `node --interrupt-budget=4000` (optimise sooner) it settles in a few hundred calls. Rank
// processes and threads inherit the flags of the node that runs the launcher.
// Usage: [node <V8 flags>] bin/tsccl.js launch [--mode threads] --nproc-per-node 2 bench/bounds/call-settle.mjs [bytes=8] [calls=6000] [block=250]
import { init } from '../../dist/src/comm/init.js';

export default async function callSettle({ args }) {
  const [bytes = 8, calls = 6000, block = 250] = args.map(Number);
  const comm = await init({ timeoutMs: 60000 });
  const count = Math.max(1, bytes / 4);
  const input = new Float32Array(count).fill(1);
  const output = new Float32Array(count);
  const medians = [];
  const times = [];
  for (let i = 0; i < calls; i++) {
    const start = performance.now();
    await comm.allReduce(input, { output });
    times.push(performance.now() - start);
    if (times.length === block) {
      times.sort((a, b) => a - b);
      medians.push(Math.round(times[block >> 1] * 1000));
      times.length = 0;
    }
  }
  await comm.destroy();
  return `${comm.transportKind} ranks, ${bytes} B all-reduce, median us of each ${block} calls: ${medians.join(' ')}`;
}
