import { TscclError } from '../errors.js';

/**
 * How the command reports a refusal (bad flags, a bad TSCCL_* setting): `tsccl: CODE: message`
 * on stderr, and the exit code 1. Anything else is a bug, rethrown with its stack.
 */
export function reportRefusal(err: unknown): number {
  if (!(err instanceof TscclError)) throw err;
  process.stderr.write(`tsccl: ${err.code}: ${err.message}\n`);
  return 1;
}
