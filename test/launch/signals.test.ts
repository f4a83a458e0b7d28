import assert from 'node:assert/strict';
import { type ChildProcess, spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { fileURLToPath } from 'node:url';

const bin = fileURLToPath(new URL('../../../bin/tsccl.js', import.meta.url));
const library = new URL('../../src/index.js', import.meta.url).href;
const dir = mkdtempSync(join(tmpdir(), 'tsccl-signals-'));
after(() => rmSync(dir, { recursive: true, force: true }));

// Each rank makes one collective (so it has flight records), says it is ready, then waits forever.
const waits = join(dir, 'waits.mjs');
writeFileSync(
  waits,
  `import { writeFileSync } from 'node:fs';
import { init } from ${JSON.stringify(library)};
const comm = await init();
await comm.allReduce(new Float32Array(4));
writeFileSync(${JSON.stringify(dir)} + '/ready-' + comm.rank, String(process.pid));
setInterval(() => {}, 1000);
await new Promise(() => {});
`,
);
// The same rank with its calls on a progress engine: the records live on the engine's thread.
const waitsOnEngine = join(dir, 'waits-engine.mjs');
writeFileSync(waitsOnEngine, readFileSync(waits, 'utf8').replace('await init()', "await init({ progress: 'engine' })"));

/** Polls `ready` until it holds, failing after a deadline meant only to stop a hang. */
async function waitFor(what: string, ready: () => boolean, deadlineMs = 60_000): Promise<void> {
  const start = Date.now();
  while (!ready()) {
    if (Date.now() - start > deadlineMs) throw new Error(`gave up waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

function start(
  args: string[],
  env: Record<string, string> = {},
): { child: ChildProcess; exited: Promise<{ code: number | null; stderr: string }> } {
  const child = spawn(process.execPath, [bin, ...args], {
    env: { ...process.env, ...env },
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  let stderr = '';
  child.stderr!.on('data', (d) => {
    stderr += d;
  });
  return { child, exited: new Promise((resolve) => child.on('exit', (code) => resolve({ code, stderr }))) };
}

const alive = (pid: number): boolean => {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};
const readyPids = (n: number): number[] =>
  Array.from({ length: n }, (_, r) => Number(readFileSync(join(dir, `ready-${r}`), 'utf8')));
const clearReady = () => {
  for (const f of readdirSync(dir)) if (f.startsWith('ready-')) rmSync(join(dir, f));
};

for (const signal of ['SIGTERM', 'SIGINT'] as const) {
  test(`tsccl launch passes ${signal} on: its ranks end and it exits with 128 + the signal's number`, async () => {
    clearReady();
    const { child, exited } = start(['launch', '--nproc-per-node', '2', waits]);
    await waitFor('both ranks', () => existsSync(join(dir, 'ready-0')) && existsSync(join(dir, 'ready-1')));
    const pids = readyPids(2);
    assert.ok(pids.every(alive));
    child.kill(signal);
    const { code, stderr } = await exited;
    assert.equal(code, signal === 'SIGTERM' ? 143 : 130);
    assert.match(stderr, new RegExp(`stopped by ${signal}`));
    await waitFor('the ranks to end', () => !pids.some(alive));
  });
}

for (const launcher of [
  ['run', '-n', '2'],
  ['launch', '--nproc-per-node', '2'],
])
  for (const [progress, script] of [
    ['', waits],
    [' (calls on progress engines)', waitsOnEngine],
  ])
    test(`SIGUSR1 to tsccl ${launcher[0]} makes every rank write its flight records, and the job goes on${progress}`, async () => {
      clearReady();
      const traces = mkdtempSync(join(dir, 'trace-'));
      const { child, exited } = start([...launcher, script], { TSCCL_TRACE_DIR: traces });
      await waitFor('both ranks', () => existsSync(join(dir, 'ready-0')) && existsSync(join(dir, 'ready-1')));
      child.kill('SIGUSR1');
      await waitFor(
        "both ranks' records",
        () => existsSync(join(traces, 'rank-0.json')) && existsSync(join(traces, 'rank-1.json')),
      );
      for (const r of [0, 1]) {
        const dump = JSON.parse(readFileSync(join(traces, `rank-${r}.json`), 'utf8')) as {
          rank: number;
          reason: string;
          comms: { records: { op: string }[] }[];
        };
        assert.equal(dump.rank, r);
        assert.equal(dump.reason, 'SIGUSR1');
        assert.ok(dump.comms[0].records.some((rec) => rec.op === 'allReduce'));
      }
      assert.equal(child.exitCode, null); // still running: the signal did not stop it (nor open an inspector)
      child.kill('SIGTERM');
      await exited;
    });
