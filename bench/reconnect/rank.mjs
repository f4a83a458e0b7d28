// One rank of bench/reconnect/netns.mjs: checksummed out-of-place all-reduces of --size MiB (so
// that operation retry may run one again), every other one
// with its connections reset while it runs (the parent resets them when rank 0 marks the call).
// Returns the time of each call, whether it was reset, and the reconnections counted.
import { existsSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { init } from '../../dist/src/index.js';

const { mib, rounds, marks } = JSON.parse(process.argv[2]);

const until = async (file) => {
  while (!existsSync(file)) await new Promise((resolve) => setTimeout(resolve, 2));
};

export default async function main() {
  const comm = await init();
  const count = (mib * 1024 * 1024) / 4;
  const data = new Float32Array(count);
  const sums = new Float32Array(count);
  const calls = [];
  for (let round = 0; round < rounds; round++) {
    const reset = round % 2 === 1;
    data.fill(comm.rank + round);
    await comm.barrier();
    if (reset && comm.rank === 0) writeFileSync(join(marks, `reset-${round}`), '');
    const start = performance.now();
    await comm.allReduce(data, { output: sums });
    const ms = performance.now() - start;
    const expected = comm.size * round + (comm.size * (comm.size - 1)) / 2;
    if (sums[0] !== expected || sums[count - 1] !== expected) throw new Error(`round ${round}: wrong sum ${sums[0]}`);
    // The next round starts only once the parent has reset what it was asked to.
    if (reset) await until(join(marks, `done-${round}`));
    calls.push({ round, reset, ms });
  }
  return { calls, reconnects: comm.stats().recoveries.reconnects, retries: comm.stats().retries };
}
