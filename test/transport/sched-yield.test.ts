import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { Worker } from 'node:worker_threads';
import { coreYield } from '../../src/transport/sched-yield.js';

test('coreYield gives the core away through WASI and reports success', () => {
  const yieldCore = coreYield();
  assert.ok(yieldCore !== undefined, 'Node >= 20 has node:wasi');
  assert.equal(yieldCore(), 0, 'WASI errno 0');
  assert.equal(coreYield(), yieldCore, 'one instance per thread');
});

test("loading it prints nothing: node:wasi's experimental warning is dropped, other warnings pass", () => {
  const module = new URL('../../src/transport/sched-yield.js', import.meta.url).href;
  const script = `import('${module}').then((m) => { m.coreYield()(); process.emitWarning('still here'); })`;
  const { stderr, status } = spawnSync(process.execPath, ['-e', script], { encoding: 'utf8' });
  assert.equal(status, 0, stderr);
  assert.doesNotMatch(stderr, /WASI/);
  assert.match(stderr, /still here/);
});

test('a worker thread gets its own', async () => {
  const module = new URL('../../src/transport/sched-yield.js', import.meta.url).href;
  const worker = new Worker(
    `import('${module}').then((m) => require('node:worker_threads').parentPort.postMessage(m.coreYield()()))`,
    { eval: true },
  );
  const errno = await new Promise((resolve, reject) => {
    worker.once('message', resolve);
    worker.once('error', reject);
  });
  await worker.terminate();
  assert.equal(errno, 0);
});
