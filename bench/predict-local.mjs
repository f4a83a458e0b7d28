#!/usr/bin/env node
// Prediction check on this machine: `tsccl bench` (measured) against `tsccl sim --topo local`
// (predicted from the `tsccl tune` profile) on the same ops, sizes and rank counts, each size
// with the algorithm the real run recorded and the tuner's chunk, so both run the same schedule.
// Usage: node bench/predict-local.mjs [--procs] [--in-place] [--rounds 3] [--blocks B] [--save FILE | --from FILE]
//   --in-place scores the bench's in-place column (the call's input is its output) instead.
//   (run `tsccl tune` first; defaults otherwise). --save keeps the measured times; --from
//   predicts again against saved ones, to compare models on the same measurements.
import { readFileSync, writeFileSync } from 'node:fs';
import { BENCH_OPS } from '../dist/src/algorithms/bench-ops.js';
import { predictOn } from '../dist/src/tuner/predict.js';
import { loadTopology } from '../dist/src/topology/load-topology.js';
import { TopologyGraph } from '../dist/src/topology/topology-graph.js';
import { loadProfile } from '../dist/src/topology/local-profile.js';
import { detectLocal } from '../dist/src/topology/local-topology.js';
import { localRanks } from './lib/local-ranks.mjs';
import { blockRows } from './lib/blocks.mjs';
import { SWEEP_ITERS, sweepRows } from './lib/sweep.mjs';
import { median } from '../dist/src/tune/median.js';

const option = (name) => {
  const at = process.argv.indexOf(name);
  return at > 0 ? process.argv[at + 1] : undefined;
};
const from = option('--from');
const saved = from === undefined ? undefined : JSON.parse(readFileSync(from, 'utf8'));
const procs = saved?.procs ?? process.argv.includes('--procs');
const inPlace = saved?.inPlace ?? process.argv.includes('--in-place');
const rounds = Number(option('--rounds') ?? 3);
const blocks = option('--blocks') === undefined ? undefined : Number(option('--blocks'));
if (inPlace && blocks !== undefined) {
  console.error('bench/predict-local.mjs: --blocks times out-of-place calls only; drop --in-place or --blocks');
  process.exit(2);
}
const detection = detectLocal();

/**
 * Each size's time is the median of `rounds` runs: single 20-call means on this VM swing 2-10x.
 * The rounds take turns over the whole grid (every op and rank count once, then again), so a slow
 * spell of the machine, which lasts minutes, falls on one run of many rows rather than on every
 * run of one. Small sizes warm up long first, as `tsccl tune` does (lib/sweep.mjs).
 * With --blocks B, each round times each size in B blocks of back-to-back calls of at least
 * 20 ms (lib/blocks.mjs, as bench/regret.mjs times them), and a size's time is the median over
 * all rounds' blocks: 20 calls of 256 KiB on 2 thread ranks last half a millisecond, and one
 * stall of the machine then weighs as much as the calls.
 */
async function measure() {
  const grid = (procs ? [2, 4] : [2, 4, 8]).flatMap((ranks) =>
    ['all_reduce', 'all_gather', 'reduce_scatter', 'broadcast'].map((op) => ({ op, ranks })),
  );
  const runs = grid.map(() => []);
  for (let round = 0; round < rounds; round++) {
    for (const [i, { op, ranks }] of grid.entries()) {
      runs[i].push(
        blocks === undefined
          ? (await sweepRows({ op, ranks, procs })).filter((r) => r.inPlace === inPlace)
          : (await blockRows({ op, ranks, procs, candidates: [{}], blocks })).map(
              ({ bytes, chosen, callsPerBlock, blockTimes }) => ({
                bytes,
                algorithm: chosen,
                calls: callsPerBlock,
                blockTimes: blockTimes[0],
              }),
            ),
      );
    }
  }
  const timeOf = (rounds, k) =>
    blocks === undefined ? median(rounds.map((r) => r[k].timeUs)) : median(rounds.flatMap((r) => r[k].blockTimes));
  return grid.flatMap(({ op, ranks }, i) =>
    runs[i][0].map((row, k) => ({
      op,
      ranks,
      bytes: row.bytes,
      algorithm: row.algorithm,
      measuredUs: timeOf(runs[i], k),
      ...(blocks === undefined ? {} : { calls: Math.min(...runs[i].map((r) => r[k].calls)) }),
    })),
  );
}

const rows = saved?.rows ?? (await measure());
const out = option('--save');
if (out !== undefined)
  writeFileSync(out, JSON.stringify({ procs, inPlace, measuredAt: new Date().toISOString(), rows }, null, 1));
console.log(
  `# profile: ${loadProfile(detection.cores, detection.host).source}${from === undefined ? '' : `; measured times from ${from} (${saved.measuredAt})`}`,
);
console.log(
  `# ${procs ? 'process ranks over TCP' : 'thread ranks over shared memory'}${inPlace ? ', in place' : ''}; ${rows[0]?.calls === undefined ? '20-call means, median of the rounds' : 'medians of blocks of back-to-back calls over the rounds'}; error = |predicted - measured| / measured`,
);
console.log(
  '| op | ranks | bytes | algorithm | measured us | predicted us | error | one call alone, us |\n|---|---:|---:|---|---:|---:|---:|---:|',
);
const errors = [];
const graphs = new Map();
for (const { op, ranks, bytes, algorithm, measuredUs, calls } of rows) {
  if (!graphs.has(ranks)) graphs.set(ranks, new TopologyGraph(loadTopology('local', { gpus: ranks, procs })));
  const inputBytes = op === 'all_gather' ? bytes / ranks : bytes;
  // The algorithm the real run recorded, simulated with the tuner's chunking for it, as the
  // bench times it: back-to-back calls on every rank (20, or a block's), the mean of their times
  // per call. A call on its own, as the tuner prices it, for comparison.
  const request = {
    collective: BENCH_OPS[op].collective,
    bytes: inputBytes,
    elementBytes: 4,
    hostCount: 1,
    algorithm,
    inPlace,
    ...localRanks(procs, ranks),
  };
  const predicted = predictOn(graphs.get(ranks), { ...request, calls: 1 + (calls ?? SWEEP_ITERS) });
  const single = predictOn(graphs.get(ranks), request);
  const error = Math.abs(predicted.timeUs - measuredUs) / measuredUs;
  if (bytes >= 64 * 1024) errors.push(error);
  console.log(
    `| ${op} | ${ranks} | ${bytes} | ${algorithm} | ${measuredUs.toFixed(1)} | ${predicted.timeUs.toFixed(1)} | ${(error * 100).toFixed(0)}% | ${single.timeUs.toFixed(1)} |`,
  );
}
errors.sort((a, b) => a - b);
console.log(
  `\n# sizes >= 64 KB: median error ${(errors[errors.length >> 1] * 100).toFixed(0)}%, worst ${(errors[errors.length - 1] * 100).toFixed(0)}% over ${errors.length} rows`,
);
