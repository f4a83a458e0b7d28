// A fresh job's first small all-reduces of each common kind (array class and reduction): after
// init, 20,000 calls of 8 B (two elements) of one kind, out of place or in place, on 2 thread ranks (or 2 process ranks
// over TCP with --tcp). Per run the mean us per call of the first 10,000 calls (while V8 still
// settles the path) and of the next 10,000 (settled), the slower rank's; medians over rounds.
// Side by side in one run, alternating: --against DIR runs the same jobs from another built
// checkout (e.g. `git worktree add /tmp/base HEAD~1 && (cd /tmp/base && npm ci && npx tsc -p .)`),
// and --env NAME=v1,v2 runs each build once per value of a TSCCL_* variable.
// Usage: node bench/first-calls-kinds.mjs [--rounds 3] [--tcp] [--against DIR] [--env NAME=v1,v2]
//          [--kinds float32:sum,float64:sum,int32:sum,float32:avg,float32:max]
import { execFileSync } from 'node:child_process';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { buildVariants, sideBySideArgs, writeRankScript } from './lib/build-variants.mjs';

const { flag, rounds, tcp, against, envSpec } = sideBySideArgs();
const kinds = flag('--kinds', 'float32:sum,float64:sum,int32:sum,float32:avg,float32:max')
  .split(',')
  .map((kind) => kind.split(':'));
const CALLS = 20_000;
const HALF = CALLS / 2;

const ARRAYS = { float32: 'Float32Array', float64: 'Float64Array', int32: 'Int32Array', uint8: 'Uint8Array' };
for (const [dtype, op] of kinds)
  if (!(dtype in ARRAYS) || op === undefined)
    throw new Error(`--kinds: ${dtype}:${op} is not <${Object.keys(ARRAYS).join('|')}>:<op>`);

/** The rank script of one checkout: it imports that checkout's build. */
function rankScript(root) {
  return writeRankScript(
    'tsccl-first-calls-',
    `import { init } from ${JSON.stringify(pathToFileURL(join(root, 'dist/src/comm/init.js')).href)};
export default async function ({ args }) {
  const [className, op, placement] = args;
  const comm = await init({ timeoutMs: 60000 });
  const input = new globalThis[className](2);
  const output = new globalThis[className](2);
  const inPlace = placement === 'in-place';
  const halves = [];
  let start = performance.now();
  for (let i = 1; i <= ${CALLS}; i++) {
    if (inPlace) await comm.allReduce(input, { op });
    else await comm.allReduce(input, { op, output });
    if (i % ${HALF} === 0) {
      const now = performance.now();
      halves.push(((now - start) * 1000) / ${HALF});
      start = now;
    }
  }
  await comm.destroy();
  console.log('result: ' + JSON.stringify(halves));
}
`,
  );
}

const builds = buildVariants({ tool: 'bench/first-calls-kinds.mjs', against, envSpec, rankScript });

const runs = new Map();
for (let round = 0; round < rounds; round++) {
  for (const [dtype, op] of kinds) {
    for (const placement of ['out-of-place', 'in-place']) {
      for (const build of builds) {
        const launch = tcp ? ['launch', '--nproc-per-node', '2'] : ['run', '-n', '2'];
        const out = execFileSync(
          process.execPath,
          [join(build.root, 'bin/tsccl.js'), ...launch, build.script, ARRAYS[dtype], op, placement],
          { env: build.env, maxBuffer: 1 << 24 },
        ).toString();
        const perRank = out
          .split('\n')
          .filter((line) => line.includes('result: '))
          .map((line) => JSON.parse(line.slice(line.indexOf('result: ') + 8)));
        const halves = [0, 1].map((h) => Math.max(...perRank.map((r) => r[h])));
        const key = `${build.name}|${dtype}:${op}|${placement}`;
        runs.set(key, [...(runs.get(key) ?? []), halves]);
      }
    }
  }
}

const median = (xs) => [...xs].sort((a, b) => a - b)[xs.length >> 1];
console.log(
  `# all_reduce of 8 B, 2 ${tcp ? 'process ranks over TCP' : 'thread ranks'}, ${new Date().toISOString()}, node ${process.version}; ${rounds} alternating rounds`,
);
console.log(
  `# us per call: mean of calls 1-${HALF} / ${HALF + 1}-${CALLS} after init, median over rounds (each round's runs)`,
);
console.log(
  '| array | op | placement | build | calls 1-10,000 | calls 10,001-20,000 | runs (first half) |\n|---|---|---|---|---:|---:|---|',
);
for (const [dtype, op] of kinds) {
  for (const placement of ['out-of-place', 'in-place']) {
    for (const build of builds) {
      const rows = runs.get(`${build.name}|${dtype}:${op}|${placement}`);
      console.log(
        `| ${ARRAYS[dtype]} | ${op} | ${placement} | ${build.name} | ${median(rows.map((r) => r[0])).toFixed(2)} | ${median(rows.map((r) => r[1])).toFixed(2)} | ${rows.map((r) => r[0].toFixed(1)).join(', ')} |`,
      );
    }
  }
}
