// One rank of bench/overlap/overlap.mjs: a 64 MiB all-reduce alone, a compute loop of about the
// same length alone, and a step that issues the all-reduce, computes, then awaits it.
import { init } from '../../dist/src/progress/init.js';

/** Synchronous work that touches no shared memory: what a rank's backward pass is to its thread. */
function compute(iterations) {
  let x = 0;
  for (let i = 0; i < iterations; i++) x += Math.sqrt(i ^ (x & 1023));
  return x;
}

/** Iterations of `compute` that take about `ms` on this thread now. */
function calibrate(ms) {
  const trial = 2e6;
  // Timed once optimised: a first, unoptimised trial runs slower, and the loop came out short.
  for (let i = 0; i < 3; i++) compute(trial);
  const start = performance.now();
  compute(trial);
  return Math.max(1, Math.round((trial * ms) / (performance.now() - start)));
}

const median = (xs) => [...xs].sort((a, b) => a - b)[xs.length >> 1];

export default async function main({ args }) {
  const { progress, mib, reps } = JSON.parse(args[0]);
  const comm =
    progress === 'inline' ? await init({ timeoutMs: 600_000 }) : await init({ progress, timeoutMs: 600_000 });
  const buffer = comm.alloc('float32', mib * 262_144).fill(1);
  await comm.allReduce(buffer);
  const timed = async (step) => {
    await comm.barrier();
    const start = performance.now();
    await step();
    return performance.now() - start;
  };
  const allReduce = [];
  for (let r = 0; r < reps; r++) allReduce.push(await timed(() => comm.allReduce(buffer)));
  // Every rank computes for as long as the slowest rank's all-reduce took.
  const target = new Float64Array([median(allReduce)]);
  await comm.allReduce(target, { op: 'max' });
  const iterations = calibrate(target[0]);
  const computeAlone = [];
  for (let r = 0; r < reps; r++) computeAlone.push(await timed(async () => compute(iterations)));
  const step = [];
  const computeInStep = [];
  for (let r = 0; r < reps; r++)
    step.push(
      await timed(async () => {
        const pending = comm.allReduce(buffer);
        const start = performance.now();
        compute(iterations);
        computeInStep.push(performance.now() - start);
        await pending;
      }),
    );
  const result = {
    allReduceMs: median(allReduce),
    computeMs: median(computeAlone),
    stepMs: median(step),
    computeInStepMs: median(computeInStep),
  };
  await comm.destroy();
  return result;
}
