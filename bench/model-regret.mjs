#!/usr/bin/env node
// Scores the tuner's cost model on measured times, without running anything: for every row of
// a bench/regret.mjs table (saved output), predict each algorithm that row forced on the local
// topology (`--topo local`, the profile or the defaults), take the model's fastest, and report
// regret = its measured time / the fastest measured time; beside it, the regret of what the
// tuner chose in that run. Shows what letting the model choose would do before it chooses.
// Usage: node bench/model-regret.mjs <regret-output.md> [--procs]
import { readFileSync } from 'node:fs';
import { BENCH_OPS } from '../dist/src/bench/bench-ops.js';
import { predictOn } from '../dist/src/tuner/predict.js';
import { loadTopology } from '../dist/src/topology/load-topology.js';
import { TopologyGraph } from '../dist/src/topology/topology-graph.js';
import { localRanks } from './lib/local-ranks.mjs';

const file = process.argv[2];
if (file === undefined) throw new Error('usage: node bench/model-regret.mjs <regret-output.md> [--procs]');
const procs = process.argv.includes('--procs');
// Rows of older runs have no calls-per-block column.
const ROW = /^\| (\w+) \| (\d+) \| (\d+) \| (?:\d+ \| )?([a-z_]+) \| \w+ \| [\d.]+ \| (.*) \|$/;
const graphs = new Map();
const model = [];
const tuner = [];
console.log('| op | ranks | bytes | model picks | regret | tuner chose | regret |\n|---|---:|---:|---|---:|---|---:|');
for (const line of readFileSync(file, 'utf8').split('\n')) {
  const match = line.match(ROW);
  if (match === null) continue;
  const [, op, ranksText, bytesText, chose, timesText] = match;
  const [ranks, bytes] = [Number(ranksText), Number(bytesText)];
  const times = Object.fromEntries(timesText.split(', ').map((p) => p.split(' ')).map(([a, t]) => [a, Number(t)]));
  if (!graphs.has(ranks)) graphs.set(ranks, new TopologyGraph(loadTopology('local', { gpus: ranks, procs })));
  const forced = Object.keys(times);
  const predicted = forced.map((algorithm) => [algorithm, predictOn(graphs.get(ranks), {
    collective: BENCH_OPS[op].collective, bytes: op === 'all_gather' ? bytes / ranks : bytes, elementBytes: 4, hostCount: 1, algorithm,
    ...localRanks(procs, ranks),
  }).timeUs]);
  const pick = predicted.sort((a, b) => a[1] - b[1])[0][0];
  // regret.mjs already pooled the tuner's own calls into the time of the algorithm it chose.
  const fastest = Math.min(...forced.map((a) => times[a]));
  const [pickRegret, choseRegret] = [times[pick] / fastest, times[chose] / fastest];
  model.push(pickRegret);
  tuner.push(choseRegret);
  console.log(`| ${op} | ${ranks} | ${bytes} | ${pick} | ${pickRegret.toFixed(2)} | ${chose} | ${choseRegret.toFixed(2)} |`);
}
const summary = (xs) => {
  const sorted = [...xs].sort((a, b) => a - b);
  return `median ${sorted[sorted.length >> 1].toFixed(2)}, worst ${sorted[sorted.length - 1].toFixed(2)}, above 1.3: ${sorted.filter((x) => x > 1.3).length} of ${sorted.length}`;
};
console.log(`\n# model: ${summary(model)}\n# tuner's run: ${summary(tuner)}`);
