import assert from 'node:assert/strict';
import { execFileSync, spawn, spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { test } from 'node:test';

const script = fileURLToPath(new URL('../fixtures/plain-allreduce.js', import.meta.url));
const hasMpirun = spawnSync('mpirun', ['--version']).status === 0;
const skip = hasMpirun ? undefined : 'mpirun not found (Debian openmpi-bin; .ci/run installs it)';
if (skip) console.log(`# mpirun test skipped: ${skip}`);

test("ranks started by Open MPI's mpirun find each other from OMPI_COMM_WORLD_* and complete an all-reduce", {
  skip,
}, () => {
  const out = execFileSync(
    'mpirun',
    [
      '--allow-run-as-root',
      '--oversubscribe',
      '-np',
      '4',
      '-x',
      'MASTER_ADDR=127.0.0.1',
      '-x',
      'MASTER_PORT=29577',
      process.execPath,
      script,
    ],
    { timeout: 300_000 },
  ).toString();
  for (let r = 0; r < 4; r++) assert.match(out, new RegExp(`^rank ${r} of 4 over tcp: OK$`, 'm'));
});

/** Starts one plain `node script` process per rank with the environment `envFor` gives; resolves with their output. */
function startRanks(n: number, envFor: (rank: number) => NodeJS.ProcessEnv): Promise<string[]> {
  return Promise.all(
    Array.from(
      { length: n },
      (_, r) =>
        new Promise<string>((resolve) => {
          const child = spawn(process.execPath, [script], { env: { ...process.env, ...envFor(r) } });
          let out = '';
          child.stdout.on('data', (d) => {
            out += d;
          });
          child.stderr.on('data', (d) => {
            out += d;
          });
          child.on('exit', () => resolve(out));
        }),
    ),
  );
}

test('ranks started like srun (SLURM_PROCID, SLURM_NTASKS) find each other too', async () => {
  const outs = await startRanks(3, (r) => ({
    SLURM_PROCID: String(r),
    SLURM_NTASKS: '3',
    SLURM_LOCALID: String(r),
    MASTER_ADDR: '127.0.0.1',
    MASTER_PORT: '29578',
  }));
  outs.forEach((out, r) => {
    assert.match(out, new RegExp(`^rank ${r} of 3 over tcp: OK$`, 'm'));
  });
});

test('a job over IPv6 loopback (MASTER_ADDR=::1) keeps to IPv6', async () => {
  const outs = await startRanks(2, (r) => ({
    RANK: String(r),
    WORLD_SIZE: '2',
    MASTER_ADDR: '::1',
    MASTER_PORT: '29579',
  }));
  outs.forEach((out, r) => {
    assert.match(out, new RegExp(`^rank ${r} of 2 over tcp: OK$`, 'm'));
  });
});

const bin = fileURLToPath(new URL('../../../bin/tsccl.js', import.meta.url));

test('tsccl bench started as the ranks of a job (tsccl launch) reports once, from rank 0, for all ranks', () => {
  // A few warm-up calls, not the default thousands: the report is the point, and 3 processes on
  // a loaded 2-core machine take minutes over the default. The bound only ends a hung job.
  const out = execFileSync(
    process.execPath,
    [
      bin,
      'launch',
      '--nproc-per-node',
      '3',
      bin,
      'bench',
      '-o',
      'all_reduce',
      '-b',
      '8',
      '-e',
      '4K',
      '-f',
      '8',
      '-n',
      '3',
      '--warmup_small',
      '10',
      '--format',
      'json',
    ],
    { timeout: 300_000 },
  ).toString();
  const json = out
    .split('\n')
    .filter((l) => l.startsWith('[0] '))
    .map((l) => l.slice(4))
    .join('\n');
  const doc = JSON.parse(json) as { transport: string; rows: { ranks: number; wrong: number }[] };
  assert.equal(doc.transport, 'tcp');
  assert.equal(doc.rows.length, 8); // 8, 64, 512, 4096 bytes x out-of-place, in-place
  for (const row of doc.rows) {
    assert.equal(row.ranks, 3);
    assert.equal(row.wrong, 0);
  }
  assert.doesNotMatch(out, /^\[[12]\] \{/m); // only rank 0 prints
});

test('tsccl bench under mpirun works like nccl-tests under mpirun', { skip }, () => {
  const out = execFileSync(
    'mpirun',
    [
      '--allow-run-as-root',
      '--oversubscribe',
      '-np',
      '2',
      '-x',
      'MASTER_ADDR=127.0.0.1',
      '-x',
      'MASTER_PORT=29612',
      process.execPath,
      bin,
      'bench',
      '-b',
      '8',
      '-e',
      '1K',
      '-f',
      '32',
      '-n',
      '3',
    ],
    { timeout: 300_000 },
  ).toString();
  assert.match(out, /# tsccl bench all_reduce: 2 ranks of a mpirun job/);
  assert.match(out, /# Out of bounds values : 0 OK/);
  assert.equal(out.match(/# Avg bus bandwidth/g)?.length, 1);
});
