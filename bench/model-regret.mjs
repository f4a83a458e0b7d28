#!/usr/bin/env node
// Scores the tuner's cost model on measured times, without running anything: for every row of
// a bench/regret.mjs table (saved output), predict each algorithm that row forced on the local
// topology (`--topo local`, the profile or the defaults), take the model's fastest, and report
// regret = its measured time / the fastest measured time; beside it, the regret of what the
// tuner chose in that run. Shows what letting the model choose would do before it chooses.
// Usage: node bench/model-regret.mjs <regret-output.md> [--procs]
import { BENCH_OPS } from '../dist/src/algorithms/bench-ops.js';
import { predictOn } from '../dist/src/tuner/predict.js';
import { loadTopology } from '../dist/src/topology/load-topology.js';
import { TopologyGraph } from '../dist/src/topology/topology-graph.js';
import { localRanks } from './lib/local-ranks.mjs';
import { regretRows, regretSummary } from './lib/regret-rows.mjs';

const file = process.argv[2];
if (file === undefined) throw new Error('usage: node bench/model-regret.mjs <regret-output.md> [--procs]');
const procs = process.argv.includes('--procs');
const graphs = new Map();
const model = [];
const tuner = [];
console.log('| op | ranks | bytes | model picks | regret | tuner chose | regret |\n|---|---:|---:|---|---:|---|---:|');
for (const { op, ranks, bytes, chose, times } of regretRows(file)) {
  if (!graphs.has(ranks)) graphs.set(ranks, new TopologyGraph(loadTopology('local', { gpus: ranks, procs })));
  const forced = Object.keys(times);
  const predicted = forced.map((algorithm) => [
    algorithm,
    predictOn(graphs.get(ranks), {
      collective: BENCH_OPS[op].collective,
      bytes: op === 'all_gather' ? bytes / ranks : bytes,
      elementBytes: 4,
      hostCount: 1,
      algorithm,
      ...localRanks(procs, ranks),
    }).timeUs,
  ]);
  const pick = predicted.sort((a, b) => a[1] - b[1])[0][0];
  // regret.mjs already pooled the tuner's own calls into the time of the algorithm it chose.
  const fastest = Math.min(...forced.map((a) => times[a]));
  const [pickRegret, choseRegret] = [times[pick] / fastest, times[chose] / fastest];
  model.push(pickRegret);
  tuner.push(choseRegret);
  console.log(
    `| ${op} | ${ranks} | ${bytes} | ${pick} | ${pickRegret.toFixed(2)} | ${chose} | ${choseRegret.toFixed(2)} |`,
  );
}
console.log(`\n# model: ${regretSummary(model)}\n# tuner's run: ${regretSummary(tuner)}`);
