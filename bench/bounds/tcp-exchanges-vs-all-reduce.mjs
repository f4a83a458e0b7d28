#!/usr/bin/env node
// A 2-process all-reduce over TCP loopback against the exchanges it is made of: the call moves
// half the buffer each way twice (reduce-scatter, then all-gather). Each round times, in turns:
// that exchange in C (bench/bounds/tcp-exchange.c: the kernel's part, no runtime), the same
// exchange between two Node processes (bench/bounds/tcp-exchange.mjs: Node's sockets), the
// all-reduce as a bare synchronous loop in Open MPI's order in C and in Node
// (bench/bounds/tcp-sync-all-reduce.c and .mjs: the call without a runtime, and Node without its
// event loop), tsccl's all-reduce (`tsccl bench --procs -g 2`) and, where mpicc is installed,
// Open MPI's (`--mca btl tcp,self`). Prints medians over rounds, each against two C exchanges.
// Two exchanges one after the other are not a floor: Open MPI's in-place call has come in under
// them (see RESULTS.md).
// Needs a C compiler (cc); installs nothing.
// Usage: node bench/bounds/tcp-exchanges-vs-all-reduce.mjs [MiB=8] [rounds=5] [calls=50]
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { median } from '../../dist/src/tune/median.js';
import { buildMpiTiming, have, mpiMissing } from '../lib/mpi-timing.mjs';

const [mib = 8, rounds = 5, calls = 50] = process.argv.slice(2).map(Number);
if (!(mib >= 2 && mib % 2 === 0 && rounds >= 1 && calls >= 1)) {
  console.error('usage: tcp-exchanges-vs-all-reduce.mjs [MiB: even, >= 2] [rounds >= 1] [calls >= 1]');
  process.exit(2);
}
if (!have('which', ['cc'])) {
  console.error('bench/bounds/tcp-exchanges-vs-all-reduce.mjs needs a C compiler: apt-get install gcc');
  process.exit(2);
}
const here = (file) => fileURLToPath(new URL(file, import.meta.url));
const bytes = mib << 20;
const dir = mkdtempSync(join(tmpdir(), 'tsccl-exchanges-'));
process.on('exit', () => rmSync(dir, { recursive: true, force: true }));
const exchangeC = join(dir, 'tcp-exchange');
execFileSync('cc', ['-O2', '-o', exchangeC, here('./tcp-exchange.c')], { stdio: 'inherit' });
const syncLoopC = join(dir, 'tcp-sync-all-reduce');
execFileSync('cc', ['-O2', '-o', syncLoopC, here('./tcp-sync-all-reduce.c')], { stdio: 'inherit' });
const missing = mpiMissing();
if (missing !== undefined) console.error(`# Open MPI rows skipped: needs ${missing}`);
const mpi = missing === undefined ? buildMpiTiming() : undefined;

const run = (cmd, args) => execFileSync(cmd, args, { maxBuffer: 1 << 24 }).toString();
const cExchangeUs = () => Number(run(exchangeC, [String(bytes / 2), String(calls)]));
const nodeExchangeUs = () => {
  const match = / ([\d.]+) ms per exchange/.exec(
    run(process.execPath, [here('./tcp-exchange.mjs'), String(mib / 2), String(calls)]),
  );
  if (match === null) throw new Error('tcp-exchange.mjs printed no time');
  return Number(match[1]) * 1000;
};
const usPerCall = (what, output) => {
  const match = /(\d+) us per call, 0 wrong/.exec(output);
  if (match === null) throw new Error(`${what} printed no time or had wrong results: ${output}`);
  return Number(match[1]);
};
const syncLoopCUs = () => usPerCall('tcp-sync-all-reduce.c', run(syncLoopC, [String(bytes), String(calls)]));
const syncLoopUs = () =>
  usPerCall(
    'tcp-sync-all-reduce.mjs',
    run(process.execPath, [here('./tcp-sync-all-reduce.mjs'), String(mib), String(calls)]),
  );
const tscclUs = () => {
  const out = JSON.parse(
    run(process.execPath, [
      here('../../bin/tsccl.js'),
      'bench',
      '--procs',
      '-g',
      '2',
      '-o',
      'all_reduce',
      '-b',
      String(bytes),
      '-e',
      String(bytes),
      '-n',
      String(calls),
      '-w',
      '5',
      '-c',
      '0',
      '--format',
      'json',
    ]),
  );
  const at = (inPlace) => out.rows.find((r) => r.inPlace === inPlace).timeUs;
  return { oop: at(false), ip: at(true) };
};
const mpiUs = () =>
  mpi
    .run('all_reduce', 2, { minBytes: bytes, maxBytes: bytes, factor: 2, iters: calls, warmup: 5 }, { tcp: true })
    .get(bytes);

const samples = { c: [], node: [], syncC: [], sync: [], tsccl: [], mpi: [] };
for (let round = 0; round < rounds; round++) {
  process.stderr.write(`# round ${round + 1}/${rounds}\n`);
  samples.c.push(2 * cExchangeUs());
  samples.node.push(2 * nodeExchangeUs());
  samples.syncC.push(syncLoopCUs());
  samples.sync.push(syncLoopUs());
  samples.tsccl.push(tscclUs());
  if (mpi !== undefined) samples.mpi.push(mpiUs());
}
const floor = median(samples.c);
const rows = [
  [`two C exchanges of ${mib / 2} MiB each way`, floor],
  [`two Node exchanges of ${mib / 2} MiB each way`, median(samples.node)],
  ['all-reduce as a synchronous C loop, out of place', median(samples.syncC)],
  ['all-reduce as a synchronous Node loop, out of place', median(samples.sync)],
  ['tsccl all-reduce, out of place', median(samples.tsccl.map((t) => t.oop))],
  ['tsccl all-reduce, in place', median(samples.tsccl.map((t) => t.ip))],
  ...(mpi === undefined
    ? []
    : [
        ['Open MPI all-reduce, out of place', median(samples.mpi.map((t) => t.oop))],
        ['Open MPI all-reduce, in place', median(samples.mpi.map((t) => t.ip))],
      ]),
];
console.log(
  `# 2 processes over TCP loopback, ${mib} MiB float32 all-reduce, ${new Date().toISOString()}, node ${process.version}${mpi ? `, ${mpi.version}` : ''}; medians of ${rounds} rounds of ${calls} calls`,
);
console.log('| what | us | / two C exchanges |\n|---|---:|---:|');
for (const [what, us] of rows) console.log(`| ${what} | ${us.toFixed(0)} | ${(us / floor).toFixed(2)} |`);
