#!/usr/bin/env node
// Side-by-side all_reduce (float, sum): tsccl thread ranks vs Open MPI's MPI_Allreduce over
// shared memory, alternating tool by tool in one run, with nccl-tests' busbw and the ratio.
// Needs Debian's openmpi-bin and libopenmpi-dev (mpicc, mpirun); installs nothing itself.
// Usage: node bench/peers.mjs [--tcp] [ranks...]   (default: 2 4)
//   default: tsccl thread ranks vs Open MPI over shared memory (btl self,vader)
//   --tcp:   tsccl process ranks over TCP loopback vs Open MPI with --mca btl tcp,self
import { execFileSync } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('..', import.meta.url));
const tcp = process.argv.includes('--tcp');
const ranksList = process.argv.slice(2).filter((a) => a !== '--tcp').map(Number);
const [minBytes, maxBytes, factor, iters] = [8, 64 * 1024 * 1024, 4, 20];
for (const tool of ['mpicc', 'mpirun']) {
  try { execFileSync('which', [tool], { stdio: 'ignore' }); } catch {
    console.error(`bench/peers.mjs needs ${tool}: apt-get install openmpi-bin libopenmpi-dev`);
    process.exit(2);
  }
}
const exe = join(mkdtempSync(join(tmpdir(), 'tsccl-peers-')), 'allreduce-timing');
execFileSync('mpicc', ['-O2', '-o', exe, join(root, 'bench/mpi/allreduce-timing.c')], { stdio: 'inherit' });
const mpiVersion = execFileSync('mpirun', ['--version']).toString().split('\n')[0];

const busbw = (bytes, us, n) => (us > 0 ? (bytes / (us * 1000)) * (2 * (n - 1)) / n : 0);
console.log(`# all_reduce float sum, ${new Date().toISOString()}, node ${process.version}, ${mpiVersion}`);
for (const n of ranksList.length > 0 ? ranksList : [2, 4]) {
  const tsccl = JSON.parse(execFileSync(process.execPath, [join(root, 'bin/tsccl.js'), 'bench', ...(tcp ? ['--procs'] : []), '-o', 'all_reduce', '-g', String(n),
    '-b', String(minBytes), '-e', String(maxBytes), '-f', String(factor), '-n', String(iters), '-c', '1', '--format', 'json'], { maxBuffer: 1 << 26 }).toString());
  const mpi = execFileSync('mpirun', ['--allow-run-as-root', '--oversubscribe', '-np', String(n), '--mca', 'btl', tcp ? 'tcp,self' : 'self,vader', exe,
    String(minBytes), String(maxBytes), String(factor), String(iters)]).toString().trim().split('\n').map((l) => l.split(' ').map(Number));
  console.log(tcp
    ? `\n## ${n} ranks (tsccl: processes, TCP loopback; Open MPI: processes, --mca btl tcp,self)`
    : `\n## ${n} ranks (tsccl: thread ranks, shared memory; Open MPI: processes, vader shared memory)`);
  console.log('| size (B) | tsccl time (us) | tsccl busbw (GB/s) | MPI time (us) | MPI busbw (GB/s) | busbw tsccl/MPI | tsccl #wrong |');
  console.log('|---:|---:|---:|---:|---:|---:|---:|');
  for (const [bytes, mpiOop] of mpi) {
    const row = tsccl.rows.find((r) => r.bytes === bytes && !r.inPlace);
    if (row === undefined) continue;
    const mpiBus = busbw(bytes, mpiOop, n);
    const ratio = mpiBus > 0 ? (row.busbwGBs / mpiBus).toFixed(2) : (mpiOop / row.timeUs).toFixed(2);
    console.log(`| ${bytes} | ${row.timeUs.toFixed(1)} | ${row.busbwGBs.toFixed(3)} | ${mpiOop.toFixed(1)} | ${mpiBus.toFixed(3)} | ${ratio} | ${row.wrong} |`);
  }
}
