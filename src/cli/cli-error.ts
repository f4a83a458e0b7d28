import { TscclError } from '../errors.js';

/**
 * How the command reports a refusal (bad flags, a bad TSCCL_* setting, a failed rank):
 * `tsccl: CODE: message` on stderr, then, for a failed rank, where its script failed; exit code 1.
 * Anything else is a bug, rethrown with its stack.
 */
export function reportRefusal(err: unknown): number {
  if (!(err instanceof TscclError)) throw err;
  process.stderr.write(`tsccl: ${err.code}: ${err.message}\n`);
  const stack = failedRankStack(err);
  if (stack !== undefined) process.stderr.write(stack);
  return 1;
}

interface Outcome {
  readonly rank: number;
  readonly error?: Error;
}

/**
 * The stack of the rank a job's error names, as the user needs it: the whole stack of an error
 * their script threw (a syntax error's first line is its file:line), and only the frames outside
 * tsccl of an error tsccl raised in one of their calls.
 */
export function failedRankStack(err: TscclError): string | undefined {
  const ranks = err.details.ranks as readonly Outcome[] | undefined;
  if (!Array.isArray(ranks) || typeof err.details.rank !== 'number') return undefined;
  const failed = ranks.find((o) => o.rank === err.details.rank)?.error;
  if (failed?.stack === undefined) return undefined;
  const lines =
    failed instanceof TscclError
      ? failed.stack.split('\n').filter((line) => /^\s+at /.test(line) && !isLibraryFrame(line))
      : failed.stack.split('\n');
  if (lines.length === 0) return undefined;
  return `Rank ${err.details.rank as number}'s stack:\n${lines.map((l: string) => `  ${l.trimEnd()}`).join('\n')}\n`;
}

const LIBRARY_ROOT = new URL('../../', import.meta.url).pathname;

function isLibraryFrame(line: string): boolean {
  return line.includes('node:internal') || line.includes(LIBRARY_ROOT) || line.includes('node:worker_threads');
}
