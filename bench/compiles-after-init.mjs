// What V8 still compiles once init has returned: a fresh job runs nccl-tests' sequence (all-reduces
// of 8 B to --max bytes, x4 a row, out of place then in place, 5 + 20 calls each) under
// `node --trace-opt --trace-deopt`, and every rank's optimising compiles and deopts after init
// are counted, with the compile time V8 reports for them (a rank's compile also holds the peers
// that wait for its data). Where the ranks compile on their own thread
// (TSCCL_RANK_SYNC_COMPILE), each such compile is a pause of that length inside a call, so a
// warm-up that leaves fewer of them to the job is better whatever this machine's pace that minute;
// counts do not move with another guest's load as call times do.
// Side by side in one run, alternating: --against DIR, --env NAME=v1,v2 (see build-variants.mjs).
// Usage: node bench/compiles-after-init.mjs [--rounds 3] [--ranks 2] [--max 524288] [--tcp]
//          [--against DIR] [--env NAME=v1,v2]
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { median } from '../dist/src/tune/median.js';
import { buildVariants, sideBySideArgs, writeRankScript } from './lib/build-variants.mjs';

const { flag, rounds, tcp, against, envSpec } = sideBySideArgs();
const ranks = Number(flag('--ranks', '2'));
const maxBytes = Number(flag('--max', '524288'));
if (!(Number.isInteger(ranks) && ranks >= 2) || !(maxBytes >= 8) || !(rounds >= 1)) {
  console.error('bench/compiles-after-init.mjs: --ranks takes 2 or more, --max 8 bytes or more, --rounds 1 or more');
  process.exit(2);
}
const sizes = [];
for (let bytes = 8; bytes <= maxBytes; bytes *= 4) sizes.push(bytes);
const MARK = 'tsccl-bench: init returned';
const DONE = 'tsccl-bench: sequence done';

function rankScript(root) {
  return writeRankScript(
    'tsccl-compiles-',
    `import { init } from ${JSON.stringify(pathToFileURL(join(root, 'dist/src/comm/init.js')).href)};
export default async function () {
  const comm = await init({ timeoutMs: 120000 });
  const sizes = ${JSON.stringify(sizes)};
  const input = comm.alloc('float32', sizes[sizes.length - 1] / 4).fill(1);
  const output = comm.alloc('float32', sizes[sizes.length - 1] / 4);
  if (comm.rank === 0) console.log(${JSON.stringify(MARK)});
  for (const bytes of sizes) {
    const x = input.subarray(0, bytes / 4);
    for (const options of [{ op: 'sum', output: output.subarray(0, bytes / 4) }, { op: 'sum' }]) {
      await comm.barrier();
      for (let i = 0; i < 25; i++) await comm.allReduce(x, options);
    }
  }
  if (comm.rank === 0) console.log(${JSON.stringify(DONE)});
  await comm.destroy();
}
`,
  );
}

/**
 * The ranks' compiles and deopts between rank 0's marks. Process ranks' lines carry the
 * launcher's "[rank] " prefix, and the launcher's own lines, which have none, are left out; thread
 * ranks share the launcher's stdout, so there every line counts.
 */
function countEvents(out) {
  const lines = out.split('\n');
  const mine = (line) => !tcp || /^\[\d+\] /.test(line);
  const from = lines.findIndex((l) => l.endsWith(MARK));
  const to = lines.findIndex((l) => l.endsWith(DONE));
  if (from < 0 || to < 0)
    throw new Error(`bench/compiles-after-init.mjs: the job printed no marks:\n${out.slice(-2000)}`);
  let compiles = 0;
  let compileMs = 0;
  let deopts = 0;
  const names = new Map();
  const deopted = new Map();
  for (const line of lines.slice(from + 1, to).filter(mine)) {
    const compiled =
      /completed compiling .*<JSFunction (?:([^ (>][^ >]*) )?[^>]*>.* took [\d.]+, ([\d.]+), ([\d.]+) ms/.exec(line);
    if (compiled) {
      compiles++;
      const ms = Number(compiled[2]) + Number(compiled[3]);
      compileMs += ms;
      names.set(compiled[1] || '(anonymous)', (names.get(compiled[1] || '(anonymous)') ?? 0) + ms);
    } else {
      const deopt = /\bbailout \(kind: deopt[^)]*\).*deoptimizing [^<]*<JSFunction (?:([^ (>][^ >]*) )?/.exec(line);
      if (deopt) {
        deopts++;
        deopted.set(deopt[1] || '(anonymous)', (deopted.get(deopt[1] || '(anonymous)') ?? 0) + 1);
      }
    }
  }
  return { compiles, compileMs, deopts, names, deopted };
}

const builds = buildVariants({ tool: 'bench/compiles-after-init.mjs', against, envSpec, rankScript });
const runs = new Map(builds.map((b) => [b.name, []]));
for (let round = 0; round < rounds; round++) {
  for (const build of builds) {
    const launch = tcp ? ['launch', '--nproc-per-node', String(ranks)] : ['run', '-n', String(ranks)];
    const run = spawnSync(
      process.execPath,
      ['--trace-opt', '--trace-deopt', join(build.root, 'bin/tsccl.js'), ...launch, build.script],
      { env: build.env, maxBuffer: 1 << 28 },
    );
    if (run.status !== 0) throw new Error(`${build.name}: the job failed:\n${run.stderr.toString().slice(-2000)}`);
    runs.get(build.name).push(countEvents(run.stdout.toString()));
  }
}

console.log(
  `# optimising compiles after init, ${ranks} ${tcp ? 'process ranks over TCP' : 'thread ranks'}, every rank's, all-reduce 8 B-${maxBytes} B x4, 25 calls a row; ${new Date().toISOString()}, node ${process.version}; ${rounds} alternating rounds`,
);
console.log(
  '| build | compiles (median; runs) | compile ms (median; runs) | deopts (runs) | longest compiles, summed over the runs | deopted, times over the runs |',
);
console.log('|---|---|---|---|---|---|');
for (const build of builds) {
  const results = runs.get(build.name);
  const summed = new Map();
  for (const r of results) for (const [name, ms] of r.names) summed.set(name, (summed.get(name) ?? 0) + ms);
  const longest = [...summed]
    .sort((a, b) => b[1] - a[1])
    .slice(0, 5)
    .map(([name, ms]) => `${name} ${ms.toFixed(1)}`)
    .join(', ');
  const deoptedTimes = new Map();
  for (const r of results) for (const [name, n] of r.deopted) deoptedTimes.set(name, (deoptedTimes.get(name) ?? 0) + n);
  const deoptedList = [...deoptedTimes].map(([name, n]) => `${name} ${n}`).join(', ') || '-';
  const compiles = results.map((r) => r.compiles);
  const ms = results.map((r) => r.compileMs);
  console.log(
    `| ${build.name} | ${median(compiles)}; ${compiles.join(', ')} | ${median(ms).toFixed(1)}; ${ms.map((m) => m.toFixed(0)).join(', ')} | ${results.map((r) => r.deopts).join(', ')} | ${longest} | ${deoptedList} |`,
  );
}
