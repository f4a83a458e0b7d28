import { performance } from 'node:perf_hooks';
import type { WaitContext } from '../transport.js';
import type { PeerLink } from './peer-link.js';
import { POLL_CHECK_MS, POLL_MAX_BYTES } from './tcp-tunables.js';

/**
 * How long a receive of `bytes` polls before it sleeps, in ms, given the transport's spin budget
 * (rankSpin of the ranks on its machine, which share its cores in whatever namespace).
 */
export function receivePollMs(bytes: number, budgetMs: number): number {
  return bytes <= POLL_MAX_BYTES ? budgetMs : 0;
}

/**
 * Waits for `ready` on a link, ending on the link's failure or the context's verdict. For
 * `pollMs` it first keeps the event loop turning (a pending setImmediate makes libuv poll the
 * sockets without blocking), so the process stays on its core instead of sleeping in epoll
 * until the kernel wakes it; `pollYield` gives the core away on every turn (rankSpin).
 */
export async function waitOnLink(
  link: PeerLink,
  ready: () => boolean,
  ctx: WaitContext,
  pollMs: number,
  pollYield: (() => number) | undefined,
): Promise<void> {
  const pollUntil = pollMs > 0 ? performance.now() + pollMs : 0;
  let nextCheck = 0;
  while (!ready()) {
    if (link.error !== undefined) throw link.error;
    if (pollUntil > 0) {
      const now = performance.now();
      if (now < pollUntil) {
        if (now >= nextCheck) {
          ctx.check();
          nextCheck = now + POLL_CHECK_MS;
        }
        pollYield?.();
        await new Promise<void>((resolve) => {
          setImmediate(resolve);
        });
        continue;
      }
    }
    ctx.check();
    await new Promise<void>((resolve) => {
      const timer = setTimeout(done, ctx.sliceMs());
      function done() {
        clearTimeout(timer);
        const at = link.wakers.indexOf(done);
        if (at >= 0) link.wakers.splice(at, 1);
        resolve();
      }
      link.wakers.push(done);
    });
  }
}
