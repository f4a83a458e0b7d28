import assert from 'node:assert/strict';
import { test } from 'node:test';
import { launch } from '../../src/launch/launch.js';

const script = new URL('../../../examples/hello-allreduce.mjs', import.meta.url).pathname;

test('launch refuses options it cannot honour before it starts a store or a rank', async () => {
  const refused = async (options: Parameters<typeof launch>[0], message: RegExp) => {
    await assert.rejects(
      launch({ output: 'silent', ...options }),
      (err: Error & { code: string }) => err.code === 'TSCCL_ERR_INVALID_ARGUMENT' && message.test(err.message),
    );
  };
  // Node's listen threw a RangeError past every handler, a stack trace instead of an error code.
  await refused(
    { script, nprocPerNode: 2, masterPort: 99999 },
    /--master-port must be a port from 0 to 65535, got 99999/,
  );
  await refused({ script, nprocPerNode: 2, masterPort: 1.5 }, /--master-port must be a port/);
  // Ignored before: every rank became a thread regardless.
  await refused(
    { script, nprocPerNode: 2, mode: 'threads', threadsPerProc: 2 },
    /--threads-per-proc applies to --mode processes/,
  );
  // Checked after node 0's store was listening, which then kept the launcher alive.
  await refused({ script, nprocPerNode: 2, threadsPerProc: 0 }, /--threads-per-proc must be a positive integer/);
});
