// The flow engine's answers over the presets' grid, against another build: every preset below on
// 1, 2 and 4 servers, every collective and algorithm the simulator offers, at 8 B, 1 MiB and
// 128 MiB with the Simple protocol. Prints the rows whose time moved and by how much.
// Usage: node bench/sim/flow-grid.mjs --against DIR [--tolerance 1e-9]
import { resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const flag = (name, fallback) => {
  const i = process.argv.indexOf(name);
  return i < 0 ? fallback : process.argv[i + 1];
};
const against = flag('--against', undefined);
if (against === undefined) {
  console.error('usage: node bench/sim/flow-grid.mjs --against DIR (a built tsccl checkout)');
  process.exit(2);
}
const tolerance = Number(flag('--tolerance', '1e-9'));
const load = async (root) => ({
  presets: await import(`${root}/dist/src/topology/presets/presets.js`),
  graphs: await import(`${root}/dist/src/topology/topology-graph.js`),
  simulate: await import(`${root}/dist/src/sim/simulate.js`),
});
const builds = [await load(resolve(fileURLToPath(new URL('../..', import.meta.url)))), await load(resolve(against))];
const { BENCH_OPS } = await import('../../dist/src/algorithms/bench-ops.js');

const PRESETS = [
  'dgx1-v100',
  'dgx-a100',
  'dgx-h100',
  'hgx-h200',
  'mi300x',
  'ascend-910b',
  'pcie-server',
  'gb200-nvl72',
];
const OPS = ['all_reduce', 'all_gather', 'reduce_scatter', 'broadcast', 'reduce', 'alltoall', 'gather', 'scatter'];
let rows = 0;
const moved = [];
for (const preset of PRESETS) {
  for (const nodes of [1, 2, 4]) {
    const graphs = builds.map((b) => new b.graphs.TopologyGraph(b.presets.buildPreset(preset, { nodes })));
    const ranks = graphs[0].accelerators;
    for (const op of OPS) {
      for (const algorithm of builds[0].simulate.simAlgorithms(graphs[0], ranks, BENCH_OPS[op].collective, false)) {
        for (const bytes of [8, 2 ** 20, 2 ** 27]) {
          const times = builds.map((b, i) => {
            const { timeUs } = b.simulate.simulateRow(graphs[i], ranks, {
              op,
              bytes,
              algorithm,
              protocols: ['Simple'],
              mode: 'flow',
              nvls: false,
              elementBytes: 4,
              root: 0,
            });
            return timeUs;
          });
          rows++;
          const change = times[0] / times[1] - 1;
          if (Math.abs(change) > tolerance)
            moved.push(
              `${preset} x${nodes} ${op} ${algorithm} ${bytes} B: ${times[1].toFixed(3)} -> ${times[0].toFixed(3)} us (${(change * 100).toFixed(4)}%)`,
            );
        }
      }
    }
  }
}
console.log(moved.join('\n'));
// Both builds share this process, so their run times here say nothing; bench/sim/scale.mjs times them apart.
console.log(`${rows - moved.length} of ${rows} rows within ${tolerance} of the other build`);
