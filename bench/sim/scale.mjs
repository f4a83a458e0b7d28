// The flow engine at cluster scale: one all-reduce row (512 MiB, tree and ring, LL128) on HGX H200
// servers with 8 x 400 Gb/s IB NICs, each run in a fresh process, timed with its peak memory.
// Each size runs with channels folded (this build's default), walking every channel
// (`everyChannel`) up to --every-max nodes, and on another build with --against DIR.
// Usage: node bench/sim/scale.mjs [--nodes 64,128,256] [--algos tree,ring] [--every-max 128] [--against DIR]
import { execFileSync } from 'node:child_process';
import { resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const here = resolve(fileURLToPath(new URL('../..', import.meta.url)));

if (process.argv[2] === '--row') {
  const [root, nodes, algorithm, every] = process.argv.slice(3);
  const { buildPreset } = await import(`${root}/dist/src/topology/presets/presets.js`);
  const { TopologyGraph } = await import(`${root}/dist/src/topology/topology-graph.js`);
  const { simulateFlows } = await import(`${root}/dist/src/sim/flow-sim.js`);
  const started = performance.now();
  const graph = new TopologyGraph(
    buildPreset('hgx-h200', { nodes: Number(nodes), nicsPerNode: 8, nicGbps: 400, nicKind: 'ib' }),
  );
  const outcome = simulateFlows(graph, graph.accelerators, {
    collective: 'allReduce',
    count: 2 ** 27,
    elementBytes: 4,
    root: 0,
    algorithm,
    protocol: 'LL128',
    everyChannel: every === 'every',
  });
  const ms = performance.now() - started;
  const rssMB = process.resourceUsage().maxRSS / 1024;
  console.log(JSON.stringify({ ms, rssMB, timeUs: outcome.timeUs, walked: outcome.walkedChannels }));
  process.exit(0);
}

const flag = (name, fallback) => {
  const i = process.argv.indexOf(name);
  return i < 0 ? fallback : process.argv[i + 1];
};
const nodeCounts = flag('--nodes', '64,128,256').split(',').map(Number);
const algos = flag('--algos', 'tree,ring').split(',');
const everyMax = Number(flag('--every-max', '128'));
const against = flag('--against', undefined);

const row = (root, nodes, algorithm, every) =>
  JSON.parse(
    execFileSync(
      process.execPath,
      ['--max-semi-space-size=192', fileURLToPath(import.meta.url), '--row', root, nodes, algorithm, every],
      { encoding: 'utf8', maxBuffer: 1 << 20 },
    ),
  );
const cell = (r) => `${(r.ms / 1000).toFixed(2)} s, ${r.rssMB.toFixed(0)} MB`;

console.log(
  `| algorithm | ranks | folded | every channel | ${against ? 'other build | ' : ''}predicted us (folded / every) |`,
);
console.log(`|---|---:|---:|---:|${against ? '---:|' : ''}---|`);
for (const algorithm of algos) {
  for (const nodes of nodeCounts) {
    const folded = row(here, nodes, algorithm, 'folded');
    const every = nodes <= everyMax ? row(here, nodes, algorithm, 'every') : undefined;
    const other = against ? row(resolve(against), nodes, algorithm, 'folded') : undefined;
    const ratio = every ? ` (${(every.ms / folded.ms).toFixed(1)}x)` : '';
    console.log(
      `| ${algorithm} | ${nodes * 8} | ${cell(folded)} | ${every ? cell(every) + ratio : '-'} | ${other ? `${cell(other)} | ` : ''}${folded.timeUs.toFixed(1)} / ${every ? every.timeUs.toFixed(1) : '-'} |`,
    );
  }
}
