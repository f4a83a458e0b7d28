#!/usr/bin/env node
// Small-call latency of thread ranks: every rank times batches of back-to-back calls of one op
// and size; per run the distribution of the batch means (min, p10, median, p90) and the young-
// and, after the timed calls, the bytes a call allocates (V8's sampling heap profiler over
// 20000 more calls, collected objects included: garbage is what makes collections). A single
// nccl-tests-style mean of 20 calls on this 2-core VM is mostly its slowest call.
// With --against DIR, the same job runs alternately from this checkout and from DIR (another
// built checkout, e.g. `git worktree add /tmp/base HEAD~1 && (cd /tmp/base && npm ci)`), so
// two builds compare side by side in one run.
// Usage: node bench/latency.mjs [--op all_reduce] [--ranks 2] [--bytes 8] [--calls 200000]
//          [--rounds 3] [--against DIR]
import { execFileSync } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const argv = process.argv.slice(2);
const flag = (name, fallback) => { const i = argv.indexOf(name); return i < 0 ? fallback : argv[i + 1]; };
const op = flag('--op', 'all_reduce');
const ranks = Number(flag('--ranks', 2));
const bytes = Number(flag('--bytes', 8));
const calls = Number(flag('--calls', 200_000));
const rounds = Number(flag('--rounds', 3));
const against = flag('--against', undefined);
const METHODS = { all_reduce: 'allReduce', all_gather: 'allGather', reduce_scatter: 'reduceScatter', broadcast: 'broadcast' };
if (!(op in METHODS)) { console.error(`bench/latency.mjs: --op must be one of ${Object.keys(METHODS).join(', ')}`); process.exit(2); }

const BATCH = 1000;
const WARMUP = 20_000;
const SAMPLED = 20_000;
/** The rank script, written once per checkout: it imports that checkout's build. */
function rankScript(root) {
  const dir = mkdtempSync(join(tmpdir(), 'tsccl-latency-'));
  const file = join(dir, 'rank.mjs');
  writeFileSync(file, `
import { Session } from 'node:inspector/promises';
import { init } from ${JSON.stringify(join(root, 'dist/src/index.js'))};
const comm = await init();
const count = Math.max(1, ${bytes} / 4);
const input = comm.alloc('float32', ${op === 'reduce_scatter' ? 'count * comm.size' : 'count'});
const output = comm.alloc('float32', ${op === 'all_gather' ? 'count * comm.size' : 'count'});
const call = () => comm.${METHODS[op]}(input, { output });
for (let i = 0; i < ${WARMUP}; i++) await call();
const means = [];
for (let b = 0; b < ${Math.ceil(calls / BATCH)}; b++) {
  const t = performance.now();
  for (let i = 0; i < ${BATCH}; i++) await call();
  means.push(((performance.now() - t) * 1000) / ${BATCH});
}
const session = new Session();
session.connect();
await session.post('HeapProfiler.startSampling', { samplingInterval: 128, includeObjectsCollectedByMinorGC: true, includeObjectsCollectedByMajorGC: true });
for (let i = 0; i < ${SAMPLED}; i++) await call();
const { profile } = await session.post('HeapProfiler.stopSampling');
session.disconnect();
const total = (node) => node.selfSize + node.children.reduce((sum, child) => sum + total(child), 0);
export default () => ({ means, bytesPerCall: total(profile.head) / ${SAMPLED} });
`);
  return file;
}

const scripts = [{ name: 'this checkout', root: fileURLToPath(new URL('..', import.meta.url)) }, ...(against ? [{ name: against, root: resolve(against) }] : [])]
  .map((build) => ({ ...build, script: rankScript(build.root), runs: [] }));
const quantile = (sorted, q) => sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))];
for (let round = 0; round < rounds; round++) {
  for (const build of scripts) {
    const out = execFileSync(process.execPath, [join(build.root, 'bin/tsccl.js'), 'run', '-n', String(ranks), build.script], { maxBuffer: 1 << 26 }).toString();
    // Each rank prints "[rank] result: {...}"; a batch takes as long as its slower rank.
    const perRank = out.split('\n').filter((l) => l.includes('] result: ')).map((l) => JSON.parse(l.slice(l.indexOf('result: ') + 8)));
    const means = perRank[0].means.map((_, b) => Math.max(...perRank.map((r) => r.means[b]))).sort((a, b) => a - b);
    build.runs.push({ means, bytesPerCall: Math.max(...perRank.map((r) => r.bytesPerCall)) });
  }
}
console.log(`# ${op} of ${bytes} B, ${ranks} thread ranks, ${new Date().toISOString()}, node ${process.version}`);
console.log(`# ${rounds} alternating runs per build; per run: ${calls} calls after ${WARMUP} warm-up, in batches of ${BATCH}; us per call (batch means)`);
console.log('| build | run | min | p10 | median | p90 | bytes allocated per call |\n|---|---:|---:|---:|---:|---:|---:|');
for (const build of scripts) {
  for (const [i, run] of build.runs.entries()) {
    const cells = [0, 0.1, 0.5, 0.9].map((q) => quantile(run.means, q).toFixed(2));
    console.log(`| ${build.name} | ${i + 1} | ${cells.join(' | ')} | ${run.bytesPerCall.toFixed(0)} |`);
  }
}
