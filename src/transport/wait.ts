import type { WaitContext } from './transport.js';

/**
 * Spin iterations before sleeping. A wake-up through waitAsync costs tens of microseconds, a
 * spin a fraction of one, but with more ranks than cores a spinning rank steals the core of the
 * rank it waits for; a short spin then sleep serves both cases.
 */
const SPIN_LIMIT = 2000;

/**
 * Resolves once words[index] differs from `value`. Sleeps with Atomics.waitAsync so the event
 * loop stays free (timers, abort signals, messages), waking at least every ctx.sliceMs() to
 * let ctx.check() end the wait.
 */
export async function waitWhileEqual(words: Int32Array, index: number, value: number, ctx: WaitContext): Promise<void> {
  for (let i = 0; i < SPIN_LIMIT; i++) if (Atomics.load(words, index) !== value) return;
  while (Atomics.load(words, index) === value) {
    ctx.check();
    const sliceMs = ctx.sliceMs();
    const result = Atomics.waitAsync(words, index, value, sliceMs);
    if (!result.async) continue;
    // A pending waitAsync does not keep Node's event loop alive: without a timer, a rank whose
    // only work is this wait would exit mid-collective.
    const keepAlive = setTimeout(noop, sliceMs + 1);
    await result.value;
    clearTimeout(keepAlive);
  }
}

function noop(): void {}
