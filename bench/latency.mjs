#!/usr/bin/env node
// Small-call latency of thread ranks, two ways:
//  default: every rank times batches of 1000 back-to-back calls of one op and size, after 20000
//    warm-up calls; per run the distribution of the batch means (min, p10, median, p90), and
//    the bytes a call allocates (V8's sampling heap profiler over 20000 more calls, collected
//    objects included: garbage is what makes collections);
//  --rows: the pattern of `tsccl bench` rows, 300 times: a barrier, 5 warm-up calls, the mean of
//    20 timed calls; per run the median and p90 of rows 100-300, how many of them took over
//    20 us, and the median of the first 100 rows (while V8 still optimises the path).
// A single nccl-tests-style mean of 20 calls on this 2-core VM is mostly its slowest call.
// Side by side in one run, alternating: --against DIR runs the same job from another built
// checkout too (e.g. `git worktree add /tmp/base HEAD~1 && (cd /tmp/base && npm ci)`), and
// --env NAME=v1,v2 runs each build once per value of a TSCCL_* variable.
// Usage: node bench/latency.mjs [--rows] [--op all_reduce] [--ranks 2] [--bytes 8] [--calls 200000]
//          [--rounds 3] [--against DIR] [--env NAME=v1,v2,...]
import { execFileSync } from 'node:child_process';
import { join } from 'node:path';
import { buildVariants, writeRankScript } from './lib/build-variants.mjs';

const argv = process.argv.slice(2);
const flag = (name, fallback) => {
  const i = argv.indexOf(name);
  return i < 0 ? fallback : argv[i + 1];
};
const rowsMode = argv.includes('--rows');
const op = flag('--op', 'all_reduce');
const ranks = Number(flag('--ranks', 2));
const bytes = Number(flag('--bytes', 8));
const calls = Number(flag('--calls', 200_000));
const rounds = Number(flag('--rounds', 3));
const against = flag('--against', undefined);
const envSpec = flag('--env', undefined);
const METHODS = {
  all_reduce: 'allReduce',
  all_gather: 'allGather',
  reduce_scatter: 'reduceScatter',
  broadcast: 'broadcast',
};
if (!(op in METHODS)) {
  console.error(`bench/latency.mjs: --op must be one of ${Object.keys(METHODS).join(', ')}`);
  process.exit(2);
}

const BATCH = 1000;
const WARMUP = 20_000;
const SAMPLED = 20_000;
const ROWS = 300;
const SETTLED_FROM = 100;

const setup = (root) => `
import { init } from ${JSON.stringify(join(root, 'dist/src/index.js'))};
const comm = await init();
const count = Math.max(1, ${bytes} / 4);
const input = comm.alloc('float32', ${op === 'reduce_scatter' ? 'count * comm.size' : 'count'});
const output = comm.alloc('float32', ${op === 'all_gather' ? 'count * comm.size' : 'count'});
const call = () => comm.${METHODS[op]}(input, { output });
`;

const batchesBody = `
import { Session } from 'node:inspector/promises';
for (let i = 0; i < ${WARMUP}; i++) await call();
const times = [];
for (let b = 0; b < ${Math.ceil(calls / BATCH)}; b++) {
  const t = performance.now();
  for (let i = 0; i < ${BATCH}; i++) await call();
  times.push(((performance.now() - t) * 1000) / ${BATCH});
}
const session = new Session();
session.connect();
await session.post('HeapProfiler.startSampling', { samplingInterval: 128, includeObjectsCollectedByMinorGC: true, includeObjectsCollectedByMajorGC: true });
for (let i = 0; i < ${SAMPLED}; i++) await call();
const { profile } = await session.post('HeapProfiler.stopSampling');
session.disconnect();
const total = (node) => node.selfSize + node.children.reduce((sum, child) => sum + total(child), 0);
export default () => ({ times, bytesPerCall: total(profile.head) / ${SAMPLED} });
`;

const rowsBody = `
const times = [];
for (let row = 0; row < ${ROWS}; row++) {
  await comm.barrier();
  for (let i = 0; i < 5; i++) await call();
  const t = performance.now();
  for (let i = 0; i < 20; i++) await call();
  times.push(((performance.now() - t) * 1000) / 20);
}
export default () => ({ times });
`;

const variants = buildVariants({
  tool: 'bench/latency.mjs',
  against,
  envSpec,
  // The rank script of one checkout: it imports that checkout's build.
  rankScript: (root) => writeRankScript('tsccl-latency-', setup(root) + (rowsMode ? rowsBody : batchesBody)),
}).map((variant) => ({ ...variant, runs: [] }));
const sorted = (xs) => [...xs].sort((a, b) => a - b);
const quantile = (xs, q) => xs[Math.min(xs.length - 1, Math.floor(q * xs.length))];
for (let round = 0; round < rounds; round++) {
  for (const variant of variants) {
    const out = execFileSync(
      process.execPath,
      [join(variant.root, 'bin/tsccl.js'), 'run', '-n', String(ranks), variant.script],
      { env: variant.env, maxBuffer: 1 << 26 },
    ).toString();
    // Each rank prints "[rank] result: {...}"; a batch or row takes as long as its slower rank.
    const perRank = out
      .split('\n')
      .filter((l) => l.includes('] result: '))
      .map((l) => JSON.parse(l.slice(l.indexOf('result: ') + 8)));
    const times = perRank[0].times.map((_, i) => Math.max(...perRank.map((r) => r.times[i])));
    variant.runs.push({ times, bytesPerCall: rowsMode ? undefined : Math.max(...perRank.map((r) => r.bytesPerCall)) });
  }
}

console.log(
  `# ${op} of ${bytes} B, ${ranks} thread ranks, ${new Date().toISOString()}, node ${process.version}; ${rounds} alternating runs per variant`,
);
if (rowsMode) {
  console.log(`# per run: ${ROWS} rows of (barrier, 5 warm-up calls, 20 timed calls), us per call of each row`);
  console.log(
    `| variant | run | rows ${SETTLED_FROM}-${ROWS}: median | p90 | over 20 us | first ${SETTLED_FROM} rows: median |\n|---|---:|---:|---:|---:|---:|`,
  );
  for (const variant of variants) {
    for (const [i, { times }] of variant.runs.entries()) {
      const settled = sorted(times.slice(SETTLED_FROM));
      const over = settled.filter((t) => t > 20).length;
      console.log(
        `| ${variant.name} | ${i + 1} | ${quantile(settled, 0.5).toFixed(1)} | ${quantile(settled, 0.9).toFixed(1)} | ${over}/${settled.length} | ${quantile(sorted(times.slice(0, SETTLED_FROM)), 0.5).toFixed(1)} |`,
      );
    }
  }
} else {
  console.log(`# per run: ${calls} calls after ${WARMUP} warm-up, in batches of ${BATCH}; us per call (batch means)`);
  console.log(
    '| variant | run | min | p10 | median | p90 | bytes allocated per call |\n|---|---:|---:|---:|---:|---:|---:|',
  );
  for (const variant of variants) {
    for (const [i, run] of variant.runs.entries()) {
      const times = sorted(run.times);
      console.log(
        `| ${variant.name} | ${i + 1} | ${[0, 0.1, 0.5, 0.9].map((q) => quantile(times, q).toFixed(2)).join(' | ')} | ${run.bytesPerCall.toFixed(0)} |`,
      );
    }
  }
}
