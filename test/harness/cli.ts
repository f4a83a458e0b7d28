import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';

/** The built `tsccl` command of this checkout. */
export const tscclBin = fileURLToPath(new URL('../../../bin/tsccl.js', import.meta.url));

export interface CliOutcome {
  /** The exit code; null when the command was killed at its timeout. */
  readonly code: number | null;
  readonly stdout: string;
  readonly stderr: string;
}

/** Runs `tsccl args...` with `env` added to this process's, killed after `timeoutMs` (a bound against hangs only). */
export async function runTsccl(
  args: readonly string[],
  { env = {}, timeoutMs = 120_000 }: { env?: Record<string, string>; timeoutMs?: number } = {},
): Promise<CliOutcome> {
  try {
    const { stdout, stderr } = await promisify(execFile)(process.execPath, [tscclBin, ...args], {
      timeout: timeoutMs,
      env: { ...process.env, ...env },
    });
    return { code: 0, stdout, stderr };
  } catch (err) {
    const e = err as { code: number | null; stdout: string; stderr: string };
    return { code: typeof e.code === 'number' ? e.code : null, stdout: e.stdout, stderr: e.stderr };
  }
}
