// A fresh job's rows of nccl-tests' sequence: after init, all-reduces of 8 B to --max bytes
// (x4 a row) on registered arrays, out of place then in place, each after a barrier and 5
// warm-up calls, 20 timed calls (what `tsccl bench -w 5 --warmup_small 0` times), on N thread
// ranks (or process ranks over TCP with --tcp). Reports, per build and rank count, the median
// time of rank 0's init (its warm-up included), each run's sum of its rows' means and the median
// of each row over the runs: where V8 still compiles the path, a row's 20 calls take the pause.
// Side by side in one run, alternating: --against DIR runs the same jobs from another built
// checkout, --env NAME=v1,v2 each build once per value of a TSCCL_* variable.
// Usage: node bench/first-rows.mjs [--rounds 3] [--ranks 2,4,8] [--max 524288] [--tcp]
//          [--against DIR] [--env NAME=v1,v2]
import { execFileSync } from 'node:child_process';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { median } from '../dist/src/tune/median.js';
import { buildVariants, sideBySideArgs, writeRankScript } from './lib/build-variants.mjs';

const { flag, rounds, tcp, against, envSpec } = sideBySideArgs();
const rankCounts = flag('--ranks', '2,4,8').split(',').map(Number);
const maxBytes = Number(flag('--max', '524288'));
if (!rankCounts.every((n) => Number.isInteger(n) && n >= 2) || !(maxBytes >= 8)) {
  console.error('bench/first-rows.mjs: --ranks takes counts of 2 or more, --max a size of 8 bytes or more');
  process.exit(2);
}
const sizes = [];
for (let bytes = 8; bytes <= maxBytes; bytes *= 4) sizes.push(bytes);

/** The rank script of one checkout: it imports that checkout's build. */
function rankScript(root) {
  return writeRankScript(
    'tsccl-first-rows-',
    `import { init } from ${JSON.stringify(pathToFileURL(join(root, 'dist/src/comm/init.js')).href)};
export default async function () {
  const initStart = performance.now();
  const comm = await init({ timeoutMs: 120000 });
  const initMs = performance.now() - initStart;
  const sizes = ${JSON.stringify(sizes)};
  const largest = sizes[sizes.length - 1] / 4;
  const input = comm.alloc('float32', largest).fill(1);
  const output = comm.alloc('float32', largest);
  const means = [];
  for (const bytes of sizes) {
    const x = input.subarray(0, bytes / 4);
    for (const options of [{ op: 'sum', output: output.subarray(0, bytes / 4) }, { op: 'sum' }]) {
      await comm.barrier();
      for (let i = 0; i < 5; i++) await comm.allReduce(x, options);
      const start = performance.now();
      for (let i = 0; i < 20; i++) await comm.allReduce(x, options);
      means.push(((performance.now() - start) * 1000) / 20);
    }
  }
  await comm.destroy();
  console.log('result: ' + JSON.stringify({ means, initMs }));
}
`,
  );
}

const builds = buildVariants({ tool: 'bench/first-rows.mjs', against, envSpec, rankScript });

const runs = new Map();
for (let round = 0; round < rounds; round++) {
  for (const ranks of rankCounts) {
    for (const build of builds) {
      const launch = tcp ? ['launch', '--nproc-per-node', String(ranks)] : ['run', '-n', String(ranks)];
      const out = execFileSync(process.execPath, [join(build.root, 'bin/tsccl.js'), ...launch, build.script], {
        env: build.env,
        maxBuffer: 1 << 24,
      }).toString();
      // Rank 0's means, as nccl-tests prints.
      const line = out.split('\n').find((l) => l.startsWith('[0] result: ') || l.startsWith('result: '));
      if (line === undefined) throw new Error(`no result from ${build.name} on ${ranks} ranks:\n${out}`);
      const key = `${build.name}|${ranks}`;
      runs.set(key, [...(runs.get(key) ?? []), JSON.parse(line.slice(line.indexOf('result: ') + 8))]);
    }
  }
}

const sum = (xs) => xs.reduce((a, b) => a + b, 0);
console.log(
  `# all_reduce rows after init, ${tcp ? 'process ranks over TCP' : 'thread ranks'}, ${new Date().toISOString()}, node ${process.version}; ${rounds} alternating rounds; us per call (rank 0), out of place / in place`,
);
const header = sizes.map((s) => `${s} B`).join(' | ');
console.log(
  `| ranks | build | init ms (median) | runs' sums of rows | ${header} |\n|---:|---|---:|---|${sizes.map(() => '---:').join('|')}|`,
);
for (const ranks of rankCounts) {
  for (const build of builds) {
    const results = runs.get(`${build.name}|${ranks}`);
    const cells = sizes.map((_, i) =>
      [2 * i, 2 * i + 1].map((k) => median(results.map((r) => r.means[k])).toFixed(1)).join(' / '),
    );
    const initMs = median(results.map((r) => r.initMs)).toFixed(0);
    console.log(
      `| ${ranks} | ${build.name} | ${initMs} | ${results.map((r) => sum(r.means).toFixed(0)).join(', ')} | ${cells.join(' | ')} |`,
    );
  }
}
