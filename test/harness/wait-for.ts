/**
 * Polls `predicate` until it holds, so a test waits for a condition instead of sleeping for a
 * guessed time. The deadline is generous on purpose: it only ends a test that would hang, and a
 * loaded machine must never reach it on the way to success.
 */
export async function waitFor(
  predicate: () => boolean | Promise<boolean>,
  {
    timeoutMs = 30_000,
    intervalMs = 2,
    what = 'a condition',
  }: { timeoutMs?: number; intervalMs?: number; what?: string } = {},
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await predicate())) {
    if (Date.now() > deadline) throw new Error(`waited ${timeoutMs} ms for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, intervalMs));
  }
}
