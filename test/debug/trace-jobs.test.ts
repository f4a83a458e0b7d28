import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { jobId, newJobId } from '../../src/debug/flight-recorder.js';
import { runTsccl } from '../harness/cli.js';

const tsccl = (env: Record<string, string>, ...args: string[]) => runTsccl(args, { env });

const library = new URL('../../src/index.js', import.meta.url).href;
const dir = mkdtempSync(join(tmpdir(), 'tsccl-trace-jobs-'));
after(() => rmSync(dir, { recursive: true, force: true }));

test('a job is named by its launcher, torchrun, Slurm or its store, in that order, as a directory name', () => {
  assert.equal(jobId({ TSCCL_JOB_ID: 'mine', TORCHELASTIC_RUN_ID: 'tr' }), 'mine');
  assert.equal(jobId({ TORCHELASTIC_RUN_ID: 'tr', SLURM_JOB_ID: '7' }), 'tr');
  assert.equal(jobId({ SLURM_JOB_ID: '7', SLURM_STEP_ID: '2' }), 'slurm-7.2');
  assert.equal(jobId({ MASTER_ADDR: 'fe80::1', MASTER_PORT: '29500' }), 'fe80__1-29500');
  assert.notEqual(newJobId(), newJobId());
  assert.match(newJobId(), /^\d{8}T\d{6}-[0-9a-f]{6}$/);
});

// Rank 0 writes its records after one collective: what a timeout or SIGUSR1 would write.
const dumps = join(dir, 'dumps.mjs');
writeFileSync(
  dumps,
  `import { init } from ${JSON.stringify(library)};
import { dumpFlightRecords } from ${JSON.stringify(new URL('../../src/debug/flight-recorder.js', import.meta.url).href)};
const comm = await init();
await comm.allReduce(new Float32Array(4));
console.log('records at', dumpFlightRecords('test'));
`,
);

test('each job dumps into a directory of its own by default, and tsccl trace refuses a directory that mixes jobs', async () => {
  const root = mkdtempSync(join(dir, 'tmp-'));
  const paths: string[] = [];
  for (const n of ['4', '2']) {
    const { code, stdout } = await tsccl({ TMPDIR: root }, 'run', '-n', n, dumps);
    assert.equal(code, 0);
    paths.push(/\[0\] records at (.*)$/m.exec(stdout)![1]);
  }
  const jobs = readdirSync(join(root, 'tsccl-trace'));
  assert.equal(jobs.length, 2);
  for (const p of paths)
    assert.ok(
      jobs.some((j) => p.startsWith(join(root, 'tsccl-trace', j))),
      p,
    );
  const first = JSON.parse(readFileSync(paths[0], 'utf8')) as { job: string; size: number };
  assert.equal(first.size, 4);
  // A directory holding records of both jobs, as one TSCCL_TRACE_DIR for all jobs would.
  const mixed = mkdtempSync(join(dir, 'mixed-'));
  writeFileSync(join(mixed, 'rank-0.json'), readFileSync(paths[0]));
  writeFileSync(join(mixed, 'rank-1.json'), readFileSync(paths[1]));
  const refused = await tsccl({}, 'trace', mixed);
  assert.equal(refused.code, 1);
  assert.match(
    refused.stderr,
    /TSCCL_ERR_INVALID_ARGUMENT: .* holds the records of 2 jobs, which tsccl trace does not mix \(.* of 4 ranks: rank-0\.json; .* of 2 ranks: rank-1\.json\)/,
  );
  const alone = await tsccl({}, 'trace', join(paths[0], '..'));
  assert.equal(alone.code, 0);
});
