#!/usr/bin/env node
// Where a warm 8 B all-reduce of 2 process ranks over TCP loopback spends its time. Each round
// times, in turns: two Node processes exchanging 8 B in a loop that never leaves JavaScript
// (socket.write, then fs.readSync on the socket until the peer's bytes are in: one write and
// one successful read per exchange, as tsccl's one-shot call makes), with the write timed on
// its own; tsccl's all-reduce (`tsccl launch --nproc-per-node 2`, in place, { op: 'sum' }),
// with its calls over 40 us counted and summed; and, where mpicc is installed, Open MPI's
// (`--mca btl tcp,self`). Every loop makes 10,000 warm-up calls, then times `calls`.
// Usage: node bench/bounds/tcp-small-calls.mjs [rounds=3] [calls=100000]
import { execFileSync, fork } from 'node:child_process';
import { readSync } from 'node:fs';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import net from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { median } from '../../dist/src/tune/median.js';
import { buildMpiTiming, mpiMissing } from '../lib/mpi-timing.mjs';

const WARMUP = 10_000;
const here = (file) => fileURLToPath(new URL(file, import.meta.url));

/** One side of the bare exchange: `calls` exchanges after the warm-up; the mean exchange and write, and the exchanges over 40 us. */
function exchange(socket, calls) {
  socket.setNoDelay(true);
  socket.pause();
  const fd = socket._handle.fd;
  const out = Buffer.alloc(8, 1);
  const into = Buffer.alloc(8);
  let start = 0;
  let writing = 0;
  let slow = 0;
  let slowMs = 0;
  Error.stackTraceLimit = 0; // an empty read throws EAGAIN: no stack for it
  for (let i = 0; i < WARMUP + calls; i++) {
    if (i === WARMUP) start = performance.now();
    const before = performance.now();
    socket.write(out);
    if (i >= WARMUP) writing += performance.now() - before;
    for (let got = 0; got < 8; ) {
      try {
        got += readSync(fd, into, got, 8 - got, null);
      } catch {}
    }
    const ms = performance.now() - before;
    if (i >= WARMUP && ms > 0.04) {
      slow++;
      slowMs += ms;
    }
  }
  return {
    us: ((performance.now() - start) * 1000) / calls,
    writeUs: (writing * 1000) / calls,
    slow: slow / calls,
    slowUs: (slowMs * 1000) / calls,
  };
}

if (process.argv[2] === 'peer') {
  const calls = Number(process.argv[4]);
  const socket = net.connect(Number(process.argv[3]), '127.0.0.1', () => {
    exchange(socket, calls);
    socket.end();
  });
} else {
  const [rounds = 3, calls = 100_000] = process.argv.slice(2).map(Number);
  if (!(rounds >= 1 && calls >= 1000)) {
    console.error('usage: tcp-small-calls.mjs [rounds >= 1] [calls >= 1000]');
    process.exit(2);
  }
  const dir = mkdtempSync(join(tmpdir(), 'tsccl-tcp-small-'));
  process.on('exit', () => rmSync(dir, { recursive: true, force: true }));
  const job = join(dir, 'all-reduce.mjs');
  writeFileSync(
    job,
    `import { init } from ${JSON.stringify(here('../../dist/src/index.js'))};
export default async function () {
  const comm = await init();
  const x = new Float32Array(2);
  const options = { op: 'sum' };
  for (let i = 0; i < ${WARMUP}; i++) await comm.allReduce(x, options);
  let slow = 0;
  let slowMs = 0;
  const start = performance.now();
  for (let i = 0; i < ${calls}; i++) {
    const before = performance.now();
    await comm.allReduce(x, options);
    const ms = performance.now() - before;
    if (ms > 0.04) { slow++; slowMs += ms; }
  }
  const us = ((performance.now() - start) * 1000) / ${calls};
  if (comm.rank === 0) console.log(JSON.stringify({ us, slow: slow / ${calls}, slowUs: (slowMs * 1000) / ${calls} }));
  await comm.destroy();
}
`,
  );
  const missing = mpiMissing();
  if (missing !== undefined) console.error(`# Open MPI row skipped: needs ${missing}`);
  const mpi = missing === undefined ? buildMpiTiming() : undefined;

  const bare = () =>
    new Promise((resolve) => {
      const server = net.createServer((socket) => {
        const result = exchange(socket, calls);
        server.close();
        socket.destroy();
        resolve(result);
      });
      server.listen(0, '127.0.0.1', () => {
        fork(fileURLToPath(import.meta.url), ['peer', String(server.address().port), String(calls)]);
      });
    });
  const tsccl = () => {
    const out = execFileSync(process.execPath, [
      here('../../bin/tsccl.js'),
      'launch',
      '--nproc-per-node',
      '2',
      job,
    ]).toString();
    return JSON.parse(/\{.*\}/.exec(out)[0]);
  };
  const sweep = { minBytes: 8, maxBytes: 8, factor: 2, iters: calls, warmup: WARMUP };
  const rows = { bare: [], write: [], bareSlow: [], bareSlowUs: [], tsccl: [], slow: [], slowUs: [], mpi: [] };
  for (let round = 0; round < rounds; round++) {
    const b = await bare();
    rows.bare.push(b.us);
    rows.write.push(b.writeUs);
    rows.bareSlow.push(b.slow * 100);
    rows.bareSlowUs.push(b.slowUs);
    const t = tsccl();
    rows.tsccl.push(t.us);
    rows.slow.push(t.slow * 100);
    rows.slowUs.push(t.slowUs);
    if (mpi !== undefined) rows.mpi.push(mpi.run('all_reduce', 2, sweep, { tcp: true }).get(8).ip);
  }
  const line = (label, values, unit = 'us') =>
    console.log(
      `${label.padEnd(52)} ${median(values).toFixed(2)} ${unit}  (${values.map((v) => v.toFixed(2)).join(' ')})`,
    );
  console.log(
    `# ${new Date().toISOString()}, node ${process.version}; 8 B, ${calls} calls after ${WARMUP}, medians of ${rounds} rounds`,
  );
  line('Node exchange, never leaving JavaScript', rows.bare);
  line('  of which socket.write', rows.write);
  line('  exchanges over 40 us', rows.bareSlow, '%');
  line('  their time, per exchange of the run', rows.bareSlowUs);
  line('tsccl all-reduce, 2 process ranks', rows.tsccl);
  line('  calls over 40 us', rows.slow, '%');
  line('  their time, per call of the run', rows.slowUs);
  if (mpi !== undefined) line('Open MPI all-reduce, tcp', rows.mpi);
}
