import { spawnSync } from 'node:child_process';

/**
 * Where a script's syntax error is: Node shows the file, line and a caret only when it prints an
 * uncaught error itself, never in `err.stack`. So the failing import is repeated in a child Node,
 * whose output has them. ES modules are parsed whole before any of them runs, so the child runs
 * none of the user's code. Returns the lines before the error's name, or undefined.
 */
export function syntaxErrorLocation(scriptUrl: string): string | undefined {
  const child = spawnSync(
    process.execPath,
    ['--input-type=module', '-e', `await import(${JSON.stringify(scriptUrl)})`],
    {
      encoding: 'utf8',
      timeout: 30_000,
      stdio: ['ignore', 'ignore', 'pipe'],
    },
  );
  const stderr = child.stderr ?? '';
  const end = stderr.indexOf('\nSyntaxError');
  if (end < 0) return undefined;
  const location = stderr
    .slice(0, end)
    .replace(/^\s*\n/, '')
    .trimEnd();
  return /:\d+\n/.test(`${location}\n`) ? location : undefined;
}
