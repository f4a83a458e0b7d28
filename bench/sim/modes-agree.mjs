// How far the analytical model is from the flow engine: every preset below, one and two servers,
// every collective and every algorithm the simulator offers there, at 8 B, 1 MiB and 128 MiB with
// the Simple protocol. Prints the rows more than 20% apart and the count within 20%.
// Usage: node bench/sim/modes-agree.mjs [path to a built tsccl checkout, default this one]
import { fileURLToPath } from 'node:url';
import { resolve } from 'node:path';

const root = resolve(process.argv[2] ?? fileURLToPath(new URL('../..', import.meta.url)));
const { buildPreset } = await import(`${root}/dist/src/topology/presets/presets.js`);
const { TopologyGraph } = await import(`${root}/dist/src/topology/topology-graph.js`);
const { simulateRow, simAlgorithms } = await import(`${root}/dist/src/sim/simulate.js`);
const { BENCH_OPS } = await import(`${root}/dist/src/algorithms/bench-ops.js`);

const PRESETS = ['dgx1-v100', 'dgx-a100', 'dgx-h100', 'mi300x', 'ascend-910b', 'pcie-server', 'gb200-nvl72'];
const OPS = ['all_reduce', 'all_gather', 'reduce_scatter', 'broadcast', 'reduce', 'alltoall', 'gather', 'scatter'];
let agree = 0;
let rows = 0;
const apart = [];
for (const preset of PRESETS) {
  for (const nodes of [1, 2]) {
    const graph = new TopologyGraph(buildPreset(preset, { nodes }));
    const ranks = graph.accelerators;
    for (const op of OPS) {
      for (const algorithm of simAlgorithms(graph, ranks, BENCH_OPS[op].collective, false)) {
        for (const bytes of [8, 2 ** 20, 2 ** 27]) {
          const run = (mode) =>
            simulateRow(graph, ranks, {
              op,
              bytes,
              algorithm,
              protocols: ['Simple'],
              mode,
              nvls: false,
              elementBytes: 4,
              root: 0,
            }).timeUs;
          const flow = run('flow');
          const analytical = run('analytical');
          rows++;
          const ratio = analytical / flow;
          if (Math.abs(ratio - 1) <= 0.2) agree++;
          else
            apart.push(
              `${preset} x${nodes} ${op} ${algorithm} ${bytes} B: flow ${flow.toFixed(1)} us, analytical ${analytical.toFixed(1)} (${ratio.toFixed(2)})`,
            );
        }
      }
    }
  }
}
console.log(apart.join('\n'));
console.log(`${agree} of ${rows} rows within 20%`);
