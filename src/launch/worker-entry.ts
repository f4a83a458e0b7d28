import { parentPort } from 'node:worker_threads';
import { TscclError } from '../errors.js';
import { threadRankBootstrap } from './bootstrap.js';

/**
 * Runs a user script as one thread rank. A default-exported function is called with
 * { rank, size, args }; what it returns (structured-cloneable) is the rank's result.
 */
const boot = threadRankBootstrap();
if (boot === undefined || parentPort === null) throw new Error('worker-entry runs only as a rank started by the tsccl launcher');
try {
  const module = (await import(boot.script)) as { default?: unknown };
  let result: unknown;
  if (typeof module.default === 'function') {
    result = await (module.default as (ctx: object) => unknown)({ rank: boot.rank, size: boot.size, args: boot.args });
  }
  parentPort.postMessage({ type: 'result', result });
} catch (err) {
  parentPort.postMessage({ type: 'error', error: serializeError(err) });
}

function serializeError(err: unknown): unknown {
  if (err instanceof TscclError) return err.toJSON();
  if (err instanceof Error) return { name: err.name, message: err.message, stack: err.stack };
  return { name: 'Error', message: String(err) };
}
