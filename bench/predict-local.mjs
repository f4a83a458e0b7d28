#!/usr/bin/env node
// Prediction check on this machine: `tsccl bench` (measured) against `tsccl sim --topo local`
// (predicted from the `tsccl tune` profile) on the same ops, sizes and rank counts, each size
// with the algorithm and chunk the executor's tuner picked, so both run the same schedule.
// Usage: node bench/predict-local.mjs [--procs]   (run `tsccl tune` first; defaults otherwise)
import { BENCH_OPS } from '../dist/src/bench/bench-ops.js';
import { runBench } from '../dist/src/bench/run-bench.js';
import { predictOn } from '../dist/src/tuner/predict.js';
import { loadTopology } from '../dist/src/topology/load-topology.js';
import { TopologyGraph } from '../dist/src/topology/topology-graph.js';
import { loadProfile } from '../dist/src/topology/local-profile.js';
import { detectLocal } from '../dist/src/topology/local-topology.js';

const procs = process.argv.includes('--procs');
const detection = detectLocal();
console.log(`# profile: ${loadProfile(detection.cores, detection.host).source}`);
console.log(`# ${procs ? 'process ranks over TCP' : 'thread ranks over shared memory'}; error = |predicted - measured| / measured`);
console.log('| op | ranks | bytes | algorithm | measured us | predicted us | error |\n|---|---:|---:|---|---:|---:|---:|');
const errors = [];
for (const ranks of procs ? [2, 4] : [2, 4, 8]) {
  const graph = new TopologyGraph(loadTopology('local', { gpus: ranks, procs }));
  for (const op of ['all_reduce', 'all_gather', 'reduce_scatter', 'broadcast']) {
    const rows = await runBench({ op, ranks, minBytes: 8, maxBytes: 64 * 1024 * 1024, stepFactor: 8, stepBytes: 1, iters: 10, warmupIters: 3, check: false, dtype: 'float32', redop: 'sum', root: 0, timeoutMs: 300_000, procs });
    for (const row of rows.filter((r) => !r.inPlace)) {
      const inputBytes = op === 'all_gather' ? row.bytes / ranks : row.bytes;
      const predicted = predictOn(graph, { collective: BENCH_OPS[op].collective, bytes: inputBytes, elementBytes: 4, hostCount: 1 });
      const { algorithm } = predicted;
      const error = Math.abs(predicted.timeUs - row.timeUs) / row.timeUs;
      if (row.bytes >= 64 * 1024) errors.push(error);
      console.log(`| ${op} | ${ranks} | ${row.bytes} | ${algorithm} | ${row.timeUs.toFixed(1)} | ${predicted.timeUs.toFixed(1)} | ${(error * 100).toFixed(0)}% |`);
    }
  }
}
errors.sort((a, b) => a - b);
console.log(`\n# sizes >= 64 KB: median error ${(errors[errors.length >> 1] * 100).toFixed(0)}%, worst ${(errors[errors.length - 1] * 100).toFixed(0)}% over ${errors.length} rows`);
