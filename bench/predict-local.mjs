#!/usr/bin/env node
// Prediction check on this machine: `tsccl bench` (measured) against `tsccl sim --topo local`
// (predicted from the `tsccl tune` profile) on the same ops, sizes and rank counts, each size
// with the algorithm the real run recorded and the tuner's chunk, so both run the same schedule.
// Usage: node bench/predict-local.mjs [--procs] [--rounds 3]   (run `tsccl tune` first; defaults otherwise)
import { BENCH_OPS } from '../dist/src/bench/bench-ops.js';
import { runBench } from '../dist/src/bench/run-bench.js';
import { predictOn } from '../dist/src/tuner/predict.js';
import { loadTopology } from '../dist/src/topology/load-topology.js';
import { TopologyGraph } from '../dist/src/topology/topology-graph.js';
import { loadProfile } from '../dist/src/topology/local-profile.js';
import { detectLocal } from '../dist/src/topology/local-topology.js';
import { LL_SLOT_BYTES } from '../dist/src/transport/shm/mailbox.js';
import { isOversubscribed } from '../dist/src/transport/wait.js';

const procs = process.argv.includes('--procs');
const roundsAt = process.argv.indexOf('--rounds');
const rounds = roundsAt > 0 ? Number(process.argv[roundsAt + 1]) : 3;
const detection = detectLocal();
console.log(`# profile: ${loadProfile(detection.cores, detection.host).source}`);
console.log(`# ${procs ? 'process ranks over TCP' : 'thread ranks over shared memory'}; error = |predicted - measured| / measured`);
console.log('| op | ranks | bytes | algorithm | measured us | predicted us | error |\n|---|---:|---:|---|---:|---:|---:|');
const errors = [];
const median = (xs) => [...xs].sort((a, b) => a - b)[xs.length >> 1];
for (const ranks of procs ? [2, 4] : [2, 4, 8]) {
  const graph = new TopologyGraph(loadTopology('local', { gpus: ranks, procs }));
  for (const op of ['all_reduce', 'all_gather', 'reduce_scatter', 'broadcast']) {
    // Each size's time is the median of --rounds runs: single 20-call means on this VM swing 2-10x.
    const runs = [];
    for (let round = 0; round < rounds; round++) {
      runs.push((await runBench({ op, ranks, minBytes: 8, maxBytes: 64 * 1024 * 1024, stepFactor: 8, stepBytes: 1, iters: 20, warmupIters: 5, check: false, dtype: 'float32', redop: 'sum', root: 0, timeoutMs: 300_000, procs })).filter((r) => !r.inPlace));
    }
    for (const [i, row] of runs[0].entries()) {
      const measured = median(runs.map((rows) => rows[i].timeUs));
      const inputBytes = op === 'all_gather' ? row.bytes / ranks : row.bytes;
      // The algorithm the real run recorded, simulated with the tuner's chunking for it.
      const predicted = predictOn(graph, {
        collective: BENCH_OPS[op].collective, bytes: inputBytes, elementBytes: 4, hostCount: 1, algorithm: row.algorithm,
        transport: procs ? 'tcp' : 'shm', oversubscribed: !procs && isOversubscribed(ranks), ...(procs ? {} : { oneShotCapacity: LL_SLOT_BYTES }),
      });
      const error = Math.abs(predicted.timeUs - measured) / measured;
      if (row.bytes >= 64 * 1024) errors.push(error);
      console.log(`| ${op} | ${ranks} | ${row.bytes} | ${row.algorithm} | ${measured.toFixed(1)} | ${predicted.timeUs.toFixed(1)} | ${(error * 100).toFixed(0)}% |`);
    }
  }
}
errors.sort((a, b) => a - b);
console.log(`\n# sizes >= 64 KB: median error ${(errors[errors.length >> 1] * 100).toFixed(0)}%, worst ${(errors[errors.length - 1] * 100).toFixed(0)}% over ${errors.length} rows`);
