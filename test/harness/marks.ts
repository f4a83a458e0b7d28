import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { waitFor } from './wait-for.js';

/**
 * Marks in a directory the ranks of one job share: one rank says an event happened, another waits
 * for it. Files work between thread ranks and process ranks alike, so a fixture orders its ranks by
 * events on both transports instead of by sleeps.
 */
export const markDirectory = (): string => mkdtempSync(join(tmpdir(), 'tsccl-marks-'));

/** Records that `name` happened. */
export function mark(dir: string, name: string): void {
  writeFileSync(join(dir, name), '');
}

/** Resolves once `name` has been marked (or throws after the generous deadline of waitFor). */
export function waitForMark(
  dir: string,
  name: string,
  { timeoutMs = 30_000 }: { timeoutMs?: number } = {},
): Promise<void> {
  return waitFor(() => existsSync(join(dir, name)), { timeoutMs, what: `mark ${name}` });
}

/** Runs `body` with a fresh mark directory, removed afterwards. */
export async function withMarks<T>(body: (dir: string) => Promise<T>): Promise<T> {
  const dir = markDirectory();
  try {
    return await body(dir);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
