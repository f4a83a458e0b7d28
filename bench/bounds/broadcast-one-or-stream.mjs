#!/usr/bin/env node
// A broadcast timed two ways: one call at a time (a barrier before each, so no call overlaps
// another) and back to back (as `tsccl bench` and nccl-tests time it, where a root may run ahead
// of its receivers). Prints, per algorithm, each rank's median single call and its mean per call
// back to back. Run as ranks of a job:
//   node bin/tsccl.js launch --nproc-per-node 4 bench/bounds/broadcast-one-or-stream.mjs [bytes=4096] [calls=400]
import { init } from '../../dist/src/index.js';

const [bytes, calls] = [Number(process.argv[2] ?? 4096), Number(process.argv[3] ?? 400)];
const comm = await init();
const buffer = new Float32Array(bytes / 4);
for (const algorithm of ['binomial_tree', 'direct', 'binomial_tree', 'direct']) {
  const single = [];
  for (let i = 0; i < calls; i++) {
    await comm.barrier();
    const start = performance.now();
    await comm.broadcast(buffer, { root: 0, algorithm });
    single.push((performance.now() - start) * 1000);
  }
  await comm.barrier();
  const start = performance.now();
  for (let i = 0; i < calls; i++) await comm.broadcast(buffer, { root: 0, algorithm });
  const streamed = ((performance.now() - start) * 1000) / calls;
  // The first quarter of the single calls warms up (small TCP calls settle slowly).
  const settled = single.slice(calls >> 2).sort((a, b) => a - b);
  const all = new Float64Array(2 * comm.size);
  await comm.allGather(new Float64Array([settled[settled.length >> 1], streamed]), { output: all });
  if (comm.rank === 0) {
    const per = (k) => Array.from({ length: comm.size }, (_, r) => all[2 * r + k].toFixed(0)).join(' ');
    console.log(
      `${algorithm} ${bytes} B: one call, median per rank ${per(0)} us; back to back, per call per rank ${per(1)} us`,
    );
  }
}
await comm.destroy();
