// A fresh job's first calls after init, in the shape `tsccl bench` makes them: views of comm.alloc
// memory, the bench's options object, sizes 8 B-2 KiB in and out of place, 300 calls each.
// Prints the mean time of those first calls and of the same calls once warm. Run with
// `node --trace-opt --trace-deopt` to count what V8 compiles and throws away after the job's
// first call (the script prints "first call" before it).
// Usage: node [--trace-opt --trace-deopt] bin/tsccl.js run -n 2 bench/bounds/first-user-calls.mjs [warm-passes=10]
import { init } from '../../dist/src/index.js';

const SIZES = [2, 8, 32, 128, 512];
const CALLS = 300;

async function pass(comm, pool, out) {
  const started = performance.now();
  for (const count of SIZES)
    for (const inPlace of [false, true]) {
      const input = pool.subarray(0, count);
      const output = inPlace ? undefined : out.subarray(0, count);
      for (let i = 0; i < CALLS; i++)
        await comm.allReduce(input, {
          op: 'sum',
          output,
          algorithm: undefined,
          dtype: 'float32',
          compression: undefined,
        });
    }
  return ((performance.now() - started) * 1000) / (SIZES.length * 2 * CALLS);
}

export default async function firstUserCalls({ args }) {
  const warmPasses = Number(args[0] ?? 10);
  const comm = await init({ timeoutMs: 60_000 });
  const pool = comm.alloc('float32', 4096);
  const out = comm.alloc('float32', 4096);
  if (comm.rank === 0) console.log('first call');
  const first = await pass(comm, pool, out);
  let warm = first;
  for (let p = 0; p < warmPasses; p++) warm = await pass(comm, pool, out);
  if (comm.rank === 0)
    console.log(
      `first ${SIZES.length * 2 * CALLS} calls: ${first.toFixed(1)} us a call; after ${warmPasses} more passes: ${warm.toFixed(1)} us`,
    );
  await comm.destroy();
}
