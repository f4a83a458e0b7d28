#!/usr/bin/env node
// A warm 8 B all-reduce of 2 thread ranks against the floor under it. Each round times, in
// turns: two worker threads exchanging 8 B through a SharedArrayBuffer with no tsccl code
// (bench/bounds/shm-exchange.mjs), their data in the cache line after the flag's, in the flag's
// own line as tsccl's low-latency slots carry it, and in the flag's line without an `await`;
// tsccl's all-reduce (`tsccl run -n 2`, 8 B in place, { op: 'sum' }); and, where mpicc is
// installed, Open MPI's (`--mca btl self,vader`). Every loop makes 10,000 warm-up calls, then
// times `calls`. Prints each row's median over the rounds, in us per call.
// Usage: node bench/bounds/shm-floor-vs-all-reduce.mjs [rounds=5] [calls=300000]
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { median } from '../../dist/src/tune/median.js';
import { buildMpiTiming, mpiMissing } from '../lib/mpi-timing.mjs';

const [rounds = 5, calls = 300_000] = process.argv.slice(2).map(Number);
if (!(rounds >= 1 && calls >= 1000)) {
  console.error('usage: shm-floor-vs-all-reduce.mjs [rounds >= 1] [calls >= 1000]');
  process.exit(2);
}
const here = (file) => fileURLToPath(new URL(file, import.meta.url));
const dir = mkdtempSync(join(tmpdir(), 'tsccl-shm-floor-'));
process.on('exit', () => rmSync(dir, { recursive: true, force: true }));
const job = join(dir, 'all-reduce.mjs');
writeFileSync(
  job,
  `import { init } from ${JSON.stringify(here('../../dist/src/index.js'))};
const comm = await init();
const x = comm.alloc('float32', 2);
const options = { op: 'sum' };
for (let i = 0; i < 10000; i++) await comm.allReduce(x, options);
const start = performance.now();
for (let i = 0; i < ${calls}; i++) await comm.allReduce(x, options);
const us = ((performance.now() - start) * 1000) / ${calls};
if (comm.rank === 0) console.log(us);
await comm.destroy();
`,
);
const missing = mpiMissing();
if (missing !== undefined) console.error(`# Open MPI row skipped: needs ${missing}`);
const mpi = missing === undefined ? buildMpiTiming() : undefined;

const exchange =
  (...options) =>
  () => {
    const out = execFileSync(process.execPath, [here('./shm-exchange.mjs'), ...options, '--calls', String(calls)]);
    return Number(/: ([\d.]+) us per call/.exec(out.toString())[1]);
  };
const rows = [
  ['exchange, data in the next cache line', exchange()],
  ["exchange, data in the flag's line", exchange('line')],
  ["exchange, data in the flag's line, no await", exchange('line', 'sync')],
  [
    'tsccl all-reduce, 2 thread ranks',
    () => {
      const out = execFileSync(process.execPath, [here('../../bin/tsccl.js'), 'run', '-n', '2', job]);
      return Number(/\] ([\d.]+)\s*$/m.exec(out.toString())[1]);
    },
  ],
];
if (mpi !== undefined) {
  const sweep = { minBytes: 8, maxBytes: 8, factor: 2, iters: calls, warmup: 10_000 };
  rows.push([
    'Open MPI all-reduce, 2 processes, vader',
    () => mpi.run('all_reduce', 2, sweep, { tcp: false }).get(8).ip,
  ]);
}

const times = rows.map(() => []);
for (let round = 0; round < rounds; round++) {
  rows.forEach(([, time], i) => {
    times[i].push(time());
  });
}
console.log(
  `# ${new Date().toISOString()}, node ${process.version}; 8 B, ${calls} calls after 10000, medians of ${rounds} rounds`,
);
rows.forEach(([label], i) => {
  const all = times[i].map((t) => t.toFixed(3)).join(' ');
  console.log(`${label.padEnd(48)} ${median(times[i]).toFixed(3)} us  (${all})`);
});
