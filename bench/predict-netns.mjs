#!/usr/bin/env node
// Prediction check on an emulated cluster: 4 network namespaces ("hosts") joined through a
// bridge by veth links shaped with tc tbf (default 1gbit), 2 process ranks per host. Runs the
// collectives for real (tsccl launch in each namespace) and predicts the same calls with the
// flow simulator on the same cluster written as a topology file (in the temp directory), with the
// algorithm the real run recorded and the tuner's chunk for it. Needs root and iproute2.
// Usage: node bench/predict-netns.mjs [rate]   (run `tsccl tune` first for this machine's TCP costs)
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { BENCH_OPS } from '../dist/src/algorithms/bench-ops.js';
import { aggregateRows } from '../dist/src/bench/run-bench.js';
import { predictOn } from '../dist/src/tuner/predict.js';
import { createNetnsStar, netnsUnavailable } from '../dist/test/harness/netns.js';
import { netnsTopology } from './lib/netns-topology.mjs';

const rate = process.argv[2] ?? '1gbit';
const why = netnsUnavailable();
if (why) {
  console.error(`predict-netns: ${why}`);
  process.exit(2);
}
const HOSTS = 4;
const PER_HOST = 2;
const n = HOSTS * PER_HOST;
// The cluster as a topology file (bench/lib/netns-topology.mjs).
const { graph, file, source } = netnsTopology({ hosts: HOSTS, perHost: PER_HOST, rate });

const bin = fileURLToPath(new URL('../bin/tsccl.js', import.meta.url));
const rankScript = fileURLToPath(new URL('../dist/src/bench/bench-rank.js', import.meta.url));
const star = createNetnsStar('p', HOSTS, rate);
console.log(
  `# ${HOSTS} hosts x ${PER_HOST} process ranks, veth links shaped to ${rate}; topology ${file}; profile ${source}`,
);
console.log(
  '| op | bytes | algorithm | measured us | predicted us | error | one call alone, us |\n|---|---:|---|---:|---:|---:|---:|',
);
const errors = [];
let port = 29700;
/**
 * The first size runs in a launch of its own and warms up long: a fresh process compiles its
 * call path over its first hundreds of calls (see SMALL_CALL_WARMUP in src/bench/warm-up.ts),
 * and with 2 warm-up calls the 64 KB rows would measure that, not the collective. Larger sizes
 * take long enough per call.
 */
const FIRST_BYTES = 64 * 1024;
const FIRST_WARMUP = 500;
try {
  for (const op of ['all_reduce', 'all_gather', 'reduce_scatter', 'broadcast']) {
    const options = {
      op,
      ranks: n,
      minBytes: FIRST_BYTES,
      maxBytes: 32 * 1024 * 1024,
      stepFactor: 8,
      stepBytes: 0,
      iters: 5,
      warmupIters: 2,
      check: false,
      dtype: 'float32',
      redop: 'sum',
      root: 0,
      timeoutMs: 300000,
    };
    const rows = [
      ...(await runOnStar({ ...options, maxBytes: FIRST_BYTES, warmupIters: FIRST_WARMUP })),
      ...(await runOnStar({ ...options, minBytes: FIRST_BYTES * options.stepFactor })),
    ];
    for (const row of rows) {
      const inputBytes = op === 'all_gather' ? row.bytes / n : row.bytes;
      // The algorithm the real run recorded, simulated with the tuner's chunking for it, as the
      // bench times it: back-to-back calls on every rank, the mean of their times per call. A
      // call on its own, as the tuner prices it, for comparison.
      const request = {
        collective: BENCH_OPS[op].collective,
        bytes: inputBytes,
        elementBytes: 4,
        hostCount: HOSTS,
        algorithm: row.algorithm,
        transport: 'tcp',
      };
      const { algorithm, timeUs: predicted } = predictOn(graph, { ...request, calls: 1 + options.iters });
      const single = predictOn(graph, request).timeUs;
      const error = Math.abs(predicted - row.timeUs) / row.timeUs;
      errors.push(error);
      console.log(
        `| ${op} | ${row.bytes} | ${algorithm} | ${row.timeUs.toFixed(0)} | ${predicted.toFixed(0)} | ${(error * 100).toFixed(0)}% | ${single.toFixed(0)} |`,
      );
    }
  }
} finally {
  star.close();
}
/** One job on the emulated cluster: a launch in every namespace; its out-of-place rows. */
async function runOnStar(options) {
  port++;
  const node = (i) =>
    new Promise((resolve) => {
      const child = spawn(
        'ip',
        [
          'netns',
          'exec',
          star.names[i],
          process.execPath,
          bin,
          'launch',
          '--nnodes',
          String(HOSTS),
          '--node-rank',
          String(i),
          '--nproc-per-node',
          String(PER_HOST),
          '--master-addr',
          star.addresses[0],
          '--master-port',
          String(port),
          rankScript,
          JSON.stringify(options),
        ],
        { env: { ...process.env, TSCCL_JOB_TOKEN: 'predict-netns' } },
      );
      let out = '';
      child.stdout.on('data', (d) => {
        out += d;
      });
      child.stderr.on('data', (d) => process.stderr.write(d));
      child.on('exit', () => resolve(out));
    });
  const outs = await Promise.all(star.names.map((_, i) => node(i)));
  const perRank = [];
  for (const m of outs.join('').matchAll(/^\[(\d+)\] result: (.*)$/gm)) perRank[Number(m[1])] = JSON.parse(m[2]);
  return aggregateRows(options, perRank).filter((r) => !r.inPlace);
}

errors.sort((a, b) => a - b);
console.log(
  `\n# median error ${(errors[errors.length >> 1] * 100).toFixed(0)}%, worst ${(errors[errors.length - 1] * 100).toFixed(0)}% over ${errors.length} rows (target: median <= 25%)`,
);
