#!/usr/bin/env node
// Calls on a fresh array each time, as a job passes a loss (`new Float32Array([loss])`) or a
// tensor's data (`tensor.dataSync()` is a new array per call), and calls of two shapes taking
// turns (the same arrays, float32 and float64 of half the count), against one array reused:
// all-reduces of 2 thread ranks (or 2 process ranks over TCP with --tcp) at --bytes (8 B and
// 4 KiB take the one-shot path, 256 KiB a schedule), each way in blocks, taking turns; per run
// the median us per call over its blocks, the slower rank's; medians over rounds.
// Side by side in one run, alternating: --against DIR runs the same jobs from another built
// checkout (e.g. `git worktree add /tmp/base HEAD~1 && (cd /tmp/base && npm ci && npx tsc -p .)`),
// and --env NAME=v1,v2 runs each build once per value of a TSCCL_* variable.
// Usage: node bench/fresh-arrays.mjs [--rounds 3] [--tcp] [--bytes 8,4096,262144] [--against DIR]
//          [--env NAME=v1,v2]
import { execFileSync } from 'node:child_process';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { buildVariants, sideBySideArgs, writeRankScript } from './lib/build-variants.mjs';

const { flag, rounds, tcp, against, envSpec } = sideBySideArgs();
const sizes = flag('--bytes', '8,4096,262144').split(',').map(Number);
if (sizes.some((bytes) => !Number.isInteger(bytes) || bytes < 4 || bytes % 4 !== 0)) {
  console.error('bench/fresh-arrays.mjs: --bytes takes sizes in bytes, multiples of 4');
  process.exit(2);
}
const WAYS = ['reused', 'fresh input, in place', 'fresh output', 'two shapes in turn'];
const BLOCKS = 7;

/** The rank script of one checkout: it imports that checkout's build. */
function rankScript(root) {
  return writeRankScript(
    'tsccl-fresh-arrays-',
    `import { init } from ${JSON.stringify(pathToFileURL(join(root, 'dist/src/comm/init.js')).href)};
export default async function ({ args }) {
  const count = Number(args[0]) / 4;
  const calls = Math.max(20, Math.min(5000, Math.round(2e6 / (count + 500))));
  const comm = await init({ timeoutMs: 60000 });
  const reused = new Float32Array(count);
  const reusedOut = new Float32Array(count);
  const doubles = new Float64Array(Math.max(1, count >> 1));
  let turn = 0;
  const ways = [
    () => comm.allReduce(reused, { output: reusedOut }),
    () => comm.allReduce(new Float32Array(count)),
    () => comm.allReduce(reused, { output: new Float32Array(count) }),
    () => (++turn & 1 ? comm.allReduce(reused, { output: reusedOut }) : comm.allReduce(doubles)),
  ];
  const times = ways.map(() => []);
  for (let block = 0; block < ${BLOCKS}; block++) {
    for (let w = 0; w < ways.length; w++) {
      const call = ways[w];
      for (let i = 0; i < calls / 10; i++) await call();
      const start = performance.now();
      for (let i = 0; i < calls; i++) await call();
      times[w].push(((performance.now() - start) * 1000) / calls);
    }
  }
  await comm.destroy();
  const median = (xs) => [...xs].sort((a, b) => a - b)[xs.length >> 1];
  console.log('result: ' + JSON.stringify(times.map(median)));
}
`,
  );
}

const builds = buildVariants({ tool: 'bench/fresh-arrays.mjs', against, envSpec, rankScript });

const runs = new Map();
for (let round = 0; round < rounds; round++) {
  for (const bytes of sizes) {
    for (const build of builds) {
      const launch = tcp ? ['launch', '--nproc-per-node', '2'] : ['run', '-n', '2'];
      const out = execFileSync(process.execPath, [join(build.root, 'bin/tsccl.js'), ...launch, build.script, bytes], {
        env: build.env,
        maxBuffer: 1 << 24,
      }).toString();
      const perRank = out
        .split('\n')
        .filter((line) => line.includes('result: '))
        .map((line) => JSON.parse(line.slice(line.indexOf('result: ') + 8)));
      const slower = WAYS.map((_, w) => Math.max(...perRank.map((rank) => rank[w])));
      const key = `${build.name}|${bytes}`;
      runs.set(key, [...(runs.get(key) ?? []), slower]);
    }
  }
}

const median = (xs) => [...xs].sort((a, b) => a - b)[xs.length >> 1];
console.log(
  `# all_reduce, 2 ${tcp ? 'process ranks over TCP' : 'thread ranks'}, float32, ${new Date().toISOString()}, node ${process.version}; ${rounds} alternating rounds`,
);
console.log(`# us per call: median of ${BLOCKS} blocks per way (taking turns in one job), medians over rounds`);
console.log(
  `| bytes | build | ${WAYS.join(' | ')} | runs (fresh input) |\n|---:|---|${WAYS.map(() => '---:').join('|')}|---|`,
);
for (const bytes of sizes) {
  for (const build of builds) {
    const rows = runs.get(`${build.name}|${bytes}`);
    const cells = WAYS.map((_, w) => median(rows.map((r) => r[w])).toFixed(2));
    console.log(`| ${bytes} | ${build.name} | ${cells.join(' | ')} | ${rows.map((r) => r[1].toFixed(1)).join(', ')} |`);
  }
}
