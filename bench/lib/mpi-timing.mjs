// Open MPI's side of a side-by-side run: builds bench/mpi/collective-timing.c with mpicc once and
// runs it under mpirun (bench/peers.mjs, bench/bounds/tcp-exchanges-vs-all-reduce.mjs).
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const source = fileURLToPath(new URL('../mpi/collective-timing.c', import.meta.url));
export const MPI_NAMES = { all_reduce: 'allreduce', all_gather: 'allgather', broadcast: 'bcast' };

export const have = (cmd, args) => {
  try {
    execFileSync(cmd, args, { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
};

/** What is missing to run Open MPI here, as an install hint; undefined when nothing is. */
export function mpiMissing() {
  const missing = ['mpicc', 'mpirun'].filter((tool) => !have('which', [tool]));
  return missing.length === 0 ? undefined : `${missing.join(' and ')} (apt-get install openmpi-bin libopenmpi-dev)`;
}

/**
 * The built harness: `run(op, n, sweep, { tcp })` gives Map bytes -> { oop, ip } in us per call
 * (tcp: --mca btl tcp,self; else self,vader shared memory); `version` is mpirun's first line.
 * The build is removed when the process exits.
 */
export function buildMpiTiming() {
  const dir = mkdtempSync(join(tmpdir(), 'tsccl-mpi-'));
  process.on('exit', () => rmSync(dir, { recursive: true, force: true }));
  const exe = join(dir, 'collective-timing');
  execFileSync('mpicc', ['-O2', '-o', exe, source], { stdio: 'inherit' });
  const version = execFileSync('mpirun', ['--version']).toString().split('\n')[0];
  const run = (op, n, sweep, { tcp }) => {
    const lines = execFileSync('mpirun', [
      '--allow-run-as-root',
      '--oversubscribe',
      '-np',
      String(n),
      '--mca',
      'btl',
      tcp ? 'tcp,self' : 'self,vader',
      exe,
      MPI_NAMES[op],
      String(sweep.minBytes),
      String(sweep.maxBytes),
      String(sweep.factor),
      String(sweep.iters),
      String(sweep.warmup),
    ])
      .toString()
      .trim()
      .split('\n');
    return new Map(lines.map((l) => l.split(' ').map(Number)).map(([bytes, oop, ip]) => [bytes, { oop, ip }]));
  };
  return { run, version };
}
