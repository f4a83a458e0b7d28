import assert from 'node:assert/strict';
import { test } from 'node:test';
import { ErrorCode, TscclError } from '../../src/errors.js';
import { init } from '../../src/progress/init.js';

const refused = async (options: unknown, message: RegExp) =>
  assert.rejects(
    init(options as never),
    (err: unknown) => err instanceof TscclError && err.code === ErrorCode.INVALID_ARGUMENT && message.test(err.message),
  );

test("init checks its options before choosing a path: progress's value, the engine's timeout, a misspelt key", async () => {
  await refused({ progress: 'threads' }, /^progress must be 'inline', 'engine' or 'auto', got 'threads'$/);
  await refused({ progress: 'engine', timeoutMs: -5 }, /^timeoutMs must be a positive number of ms, got -5$/);
  await refused({ progres: 'engine' }, /unknown option 'progres' for init; did you mean 'progress'\?/);
});
