#!/usr/bin/env node
// Side-by-side collectives: tsccl against Open MPI (and, over TCP, Gloo), tool after tool in
// each round of ONE run, medians over rounds, nccl-tests' busbw and the ratio tsccl/peer.
// Needs Debian's openmpi-bin and libopenmpi-dev (mpicc, mpirun); Gloo rows need python3-torch.
// Installs nothing itself: it says what is missing and skips that peer.
// Every all_reduce also gets a latency row: 8 B, the mean of 100000 calls after 10000 warm-up
// calls for every tool, because a mean of 20 calls after 5 warm-ups measures V8 still compiling
// tsccl's small-call path and the slowest call of a noisy machine (bench/RESULTS.md).
// --warmup N: warm-up calls before each size's timed calls, for every tool (default nccl-tests' 5);
// a longer warm-up shows tsccl's steady state once V8 has optimised its call path.
// --baseline DIR: another built tsccl checkout (e.g. a git worktree of an older commit, after
// `npx tsc`), run in the same rounds, for a before/after table of the two builds' times.
// Usage: node bench/peers.mjs [--tcp] [--rounds N] [--max BYTES] [--warmup N] [--baseline DIR] [op:ranks ...]
//   default (shared memory): all_reduce:2 all_reduce:4 all_reduce:8 all_gather:4 broadcast:4,
//     tsccl thread ranks vs Open MPI over vader shared memory (--oversubscribe)
//   --tcp: all_reduce:2, tsccl process ranks over TCP loopback vs Open MPI --mca btl tcp,self
//     and torch.distributed Gloo
import { execFileSync, spawn } from 'node:child_process';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { MPI_NAMES, buildMpiTiming, have, mpiMissing } from './lib/mpi-timing.mjs';

const root = fileURLToPath(new URL('..', import.meta.url));
const argv = process.argv.slice(2);
const flag = (name) => {
  const i = argv.indexOf(name);
  return i < 0 ? undefined : argv.splice(i, 2)[1];
};
const tcp = argv.includes('--tcp');
if (tcp) argv.splice(argv.indexOf('--tcp'), 1);
const rounds = Number(flag('--rounds') ?? 3);
const maxBytes = Number(flag('--max') ?? 128 * 1024 * 1024);
const warmup = Number(flag('--warmup') ?? 5);
const baselineRoot = flag('--baseline');
if (!(Number.isInteger(warmup) && warmup >= 0)) {
  console.error('bench/peers.mjs: --warmup must be a whole number of calls, 0 or more');
  process.exit(2);
}
const [minBytes, factor, iters] = [8, 4, 20];
const SWEEP = { minBytes, maxBytes, factor, iters, warmup };
const LATENCY = { minBytes: 8, maxBytes: 8, factor, iters: 100_000, warmup: 10_000 };
const plan = (
  argv.length > 0
    ? argv
    : tcp
      ? ['all_reduce:2']
      : ['all_reduce:2', 'all_reduce:4', 'all_reduce:8', 'all_gather:4', 'broadcast:4']
).map((spec) => {
  const [op, n] = spec.split(':');
  return { op, n: Number(n) };
});
const BUS_FACTOR = { all_reduce: (n) => (2 * (n - 1)) / n, all_gather: (n) => (n - 1) / n, broadcast: () => 1 };
for (const { op, n } of plan) {
  if (!(op in MPI_NAMES) || !(n >= 2)) {
    console.error(`bench/peers.mjs: '${op}:${n}' must be all_reduce, all_gather or broadcast with 2+ ranks`);
    process.exit(2);
  }
}

const missing = mpiMissing();
if (missing !== undefined) {
  console.error(`bench/peers.mjs needs ${missing}`);
  process.exit(2);
}
// Debian's python3-torch lands in the system python, which a pyenv shim may hide.
const python = tcp
  ? [process.env.PYTHON, 'python3', '/usr/bin/python3'].find((p) => p && have(p, ['-c', 'import torch.distributed']))
  : undefined;
const gloo = python !== undefined;
if (tcp && !gloo)
  console.error('# Gloo rows skipped: no python3 (or $PYTHON) can import torch (apt-get install python3-torch)');
const mpi = buildMpiTiming();
const versions = [
  mpi.version,
  ...(gloo
    ? [`torch ${execFileSync(python, ['-c', 'import torch; print(torch.__version__)']).toString().trim()}`]
    : []),
];

/** Rows of one tool run: Map bytes -> { oop, ip } in us (and #wrong for tsccl). */
function runTsccl(op, n, check, sweep, checkout = root) {
  const out = JSON.parse(
    execFileSync(
      process.execPath,
      [
        join(checkout, 'bin/tsccl.js'),
        'bench',
        ...(tcp ? ['--procs'] : []),
        '-o',
        op,
        '-g',
        String(n),
        '-b',
        String(sweep.minBytes),
        '-e',
        String(sweep.maxBytes),
        '-f',
        String(factor),
        '-n',
        String(sweep.iters),
        '-w',
        String(sweep.warmup),
        // Every tool gets the same warm-up calls (tsccl bench would warm small sizes up 4000).
        '--warmup_small',
        '0',
        '-c',
        check ? '1' : '0',
        '--format',
        'json',
      ],
      { maxBuffer: 1 << 26 },
    ).toString(),
  );
  const rows = new Map();
  for (const r of out.rows) {
    const row = rows.get(r.bytes) ?? { wrong: 0 };
    row[r.inPlace ? 'ip' : 'oop'] = r.timeUs;
    row.wrong += r.wrong;
    rows.set(r.bytes, row);
  }
  return rows;
}

async function runGloo(n, sweep) {
  const port = String(20000 + Math.floor(Math.random() * 20000));
  const script = join(root, 'bench/gloo/gloo-timing.py');
  const outputs = await Promise.all(
    Array.from(
      { length: n },
      (_, rank) =>
        new Promise((resolve, reject) => {
          const child = spawn(
            python,
            [
              script,
              String(sweep.minBytes),
              String(sweep.maxBytes),
              String(factor),
              String(sweep.iters),
              String(sweep.warmup),
            ],
            {
              env: {
                ...process.env,
                RANK: String(rank),
                WORLD_SIZE: String(n),
                MASTER_ADDR: '127.0.0.1',
                MASTER_PORT: port,
              },
              stdio: ['ignore', 'pipe', 'inherit'],
            },
          );
          let text = '';
          child.stdout.on('data', (d) => {
            text += d;
          });
          child.on('exit', (code) =>
            code === 0 ? resolve(text) : reject(new Error(`gloo rank ${rank} exited with ${code}`)),
          );
        }),
    ),
  );
  return new Map(
    outputs[0]
      .trim()
      .split('\n')
      .map((l) => l.split(' ').map(Number))
      .map(([bytes, ip]) => [bytes, { ip }]),
  );
}

const median = (xs) => {
  const s = xs.filter((x) => x !== undefined).sort((a, b) => a - b);
  return s.length === 0 ? undefined : s[(s.length - 1) >> 1];
};
const busbw = (op, bytes, us, n) => (us > 0 ? (bytes / (us * 1000)) * BUS_FACTOR[op](n) : 0);
const fmt = (x, digits) => (x === undefined ? '-' : x.toFixed(digits));

const results = plan.map(() => ({ tsccl: [], mpi: [], gloo: [], baseline: [] }));
const latency = plan.map(() => ({ tsccl: [], mpi: [], gloo: [], baseline: [] }));
for (let round = 0; round < rounds; round++) {
  for (const [i, { op, n }] of plan.entries()) {
    process.stderr.write(`# round ${round + 1}/${rounds}: ${op} on ${n} ranks\n`);
    // Both builds check their results in the first round and alternate which runs first, so that
    // neither pays alone for what comes first or checks.
    const baselineFirst = round % 2 === 1;
    if (baselineRoot !== undefined && baselineFirst)
      results[i].baseline.push(runTsccl(op, n, round === 0, SWEEP, baselineRoot));
    results[i].tsccl.push(runTsccl(op, n, round === 0, SWEEP));
    if (baselineRoot !== undefined && !baselineFirst)
      results[i].baseline.push(runTsccl(op, n, round === 0, SWEEP, baselineRoot));
    results[i].mpi.push(mpi.run(op, n, SWEEP, { tcp }));
    if (gloo && op === 'all_reduce') results[i].gloo.push(await runGloo(n, SWEEP));
    if (op !== 'all_reduce') continue;
    if (baselineRoot !== undefined && baselineFirst)
      latency[i].baseline.push(runTsccl(op, n, false, LATENCY, baselineRoot));
    latency[i].tsccl.push(runTsccl(op, n, false, LATENCY));
    if (baselineRoot !== undefined && !baselineFirst)
      latency[i].baseline.push(runTsccl(op, n, false, LATENCY, baselineRoot));
    latency[i].mpi.push(mpi.run(op, n, LATENCY, { tcp }));
    if (gloo) latency[i].gloo.push(await runGloo(n, LATENCY));
  }
}

console.log(
  `# ${new Date().toISOString()}, node ${process.version}, ${versions.join(', ')}; medians of ${rounds} rounds, ${iters} calls each after ${warmup} warm-up calls, float32`,
);
for (const [i, { op, n }] of plan.entries()) {
  const r = results[i];
  const withGloo = r.gloo.length > 0;
  console.log(
    tcp
      ? `\n## ${op}, ${n} ranks (tsccl: processes over TCP loopback; Open MPI: --mca btl tcp,self${withGloo ? '; Gloo: torch.distributed, in place' : ''})`
      : `\n## ${op}, ${n} ranks (tsccl: thread ranks, shared memory; Open MPI: processes, vader shared memory)`,
  );
  console.log(
    `| size (B) | tsccl us | tsccl busbw | MPI us | MPI busbw | tsccl/MPI |${withGloo ? ' tsccl in-place us | Gloo us | Gloo busbw | tsccl/Gloo |' : ''} tsccl #wrong |`,
  );
  console.log(`|---:|---:|---:|---:|---:|---:|${withGloo ? '---:|---:|---:|---:|' : ''}---:|`);
  for (const bytes of r.mpi[0].keys()) {
    const t = median(r.tsccl.map((m) => m.get(bytes)?.oop));
    const m = median(r.mpi.map((x) => x.get(bytes)?.oop));
    if (t === undefined) continue;
    const ratio = (a, b) =>
      a === undefined || b === undefined
        ? '-'
        : (busbw(op, bytes, a, n) > 0 ? busbw(op, bytes, a, n) / busbw(op, bytes, b, n) : b / a).toFixed(2);
    let line = `| ${bytes} | ${fmt(t, 1)} | ${fmt(busbw(op, bytes, t, n), 3)} | ${fmt(m, 1)} | ${fmt(m === undefined ? undefined : busbw(op, bytes, m, n), 3)} | ${ratio(t, m)} |`;
    if (withGloo) {
      const tip = median(r.tsccl.map((x) => x.get(bytes)?.ip));
      const g = median(r.gloo.map((x) => x.get(bytes)?.ip));
      line += ` ${fmt(tip, 1)} | ${fmt(g, 1)} | ${fmt(g === undefined ? undefined : busbw(op, bytes, g, n), 3)} | ${ratio(tip, g)} |`;
    }
    console.log(`${line} ${r.tsccl[0].get(bytes)?.wrong ?? '-'} |`);
  }
}

const latencyRows = plan.map((spec, i) => ({ ...spec, ...latency[i] })).filter((row) => row.tsccl.length > 0);
if (latencyRows.length > 0) {
  const withGloo = latencyRows.some((row) => row.gloo.length > 0);
  console.log(
    `\n## all_reduce latency: ${LATENCY.minBytes} B, mean of ${LATENCY.iters} calls after ${LATENCY.warmup} warm-up calls, every tool; medians of ${rounds} rounds`,
  );
  console.log(
    `| ranks | tsccl us (out of place / in place) | MPI us | tsccl time / MPI time |${withGloo ? ' Gloo us | tsccl in-place time / Gloo time |' : ''}`,
  );
  console.log(`|---:|---:|---:|---:|${withGloo ? '---:|---:|' : ''}`);
  for (const row of latencyRows) {
    const at = (runs, key) => median(runs.map((m) => m.get(LATENCY.minBytes)?.[key]));
    const [t, tip, m, g] = [at(row.tsccl, 'oop'), at(row.tsccl, 'ip'), at(row.mpi, 'oop'), at(row.gloo, 'ip')];
    const times = (a, b) => (a === undefined || b === undefined ? '-' : `${(a / b).toFixed(1)}x`);
    console.log(
      `| ${row.n} | ${fmt(t, 2)} / ${fmt(tip, 2)} | ${fmt(m, 2)} | ${times(t, m)} |${withGloo ? ` ${fmt(g, 1)} | ${times(tip, g)} |` : ''}`,
    );
  }
}

if (baselineRoot !== undefined) {
  console.log(
    `\n## this build against the baseline build (${baselineRoot}), same rounds; time ratio > 1 means this build is slower`,
  );
  console.log('| call | size (B) | this build us | baseline us | this / baseline |');
  console.log('|---|---:|---:|---:|---:|');
  const compare = (label, runs, bytes) => {
    const t = median(runs.tsccl.map((m) => m.get(bytes)?.oop));
    const b = median(runs.baseline.map((m) => m.get(bytes)?.oop));
    if (t !== undefined && b !== undefined)
      console.log(`| ${label} | ${bytes} | ${fmt(t, 2)} | ${fmt(b, 2)} | ${(t / b).toFixed(2)} |`);
  };
  for (const [i, { op, n }] of plan.entries()) {
    for (const bytes of results[i].tsccl[0].keys()) compare(`${op} ${n} ranks`, results[i], bytes);
    if (latency[i].tsccl.length > 0) compare(`${op} ${n} ranks, ${LATENCY.iters} calls`, latency[i], LATENCY.minBytes);
  }
}
