// The module's binding, not the lazy global getter: a clock read per spin turn (debug/epoch-clock.ts).
import { performance } from 'node:perf_hooks';
import type { SpinPolicy, WaitContext } from './transport.js';

import { availableParallelism } from 'node:os';
import { paramFlag, paramInt } from '../config/params.js';
import { coreYield } from './sched-yield.js';

/**
 * How long to spin before sleeping, in ms. With more busy ranks than cores a spinning rank steals
 * the core of the rank it waits for, so it spins only briefly; otherwise it spins longer than a
 * sleeping peer takes to wake, or every hand-off pays a wake-up (docs/tuning.md, TSCCL_SPIN_US).
 */
export function spinBudgetMs(busyThreads: number): number {
  return isOversubscribed(busyThreads) ? 0.002 : paramInt('TSCCL_SPIN_US') / 1000;
}

/** More busy threads than cores: every hand-off between ranks costs a sleep and a wake-up. */
export function isOversubscribed(busyThreads: number): boolean {
  return busyThreads > availableParallelism();
}

/**
 * How a rank spins (thread ranks) or polls its sockets (process ranks), given the busy ranks
 * that share its cores. While every rank has a core, as spinBudgetMs says. When they outnumber
 * the cores, a rank that sleeps at once pays a wake-up per hand-off; one that spins keeps the
 * core from the peer it waits for. So it spins as long as a rank with a core, but yields its
 * core on every turn (TSCCL_SPIN_YIELD=1, where WASI gives sched_yield), as Open MPI's
 * oversubscribed ranks do. 8 B all-reduce on 2 cores, two runs each alternating, sleeping
 * against yielding: 4 thread ranks 44-58 us a call against 10-14, 8 thread ranks 93-133 against
 * 22-31; 4 process ranks 167-168 against 88-99, 8 process ranks 461-535 against 293-366.
 */
export function rankSpin(busyRanks: number): SpinPolicy {
  const spinYields = isOversubscribed(busyRanks) && paramFlag('TSCCL_SPIN_YIELD') && coreYield() !== undefined;
  return { spinMs: spinYields ? paramInt('TSCCL_SPIN_US') / 1000 : spinBudgetMs(busyRanks), spinYields };
}

/**
 * Spins up to spin.spinMs for `ready`, checking the clock every 64 tries (every 8 when each try
 * also yields the core, a system call); true if it came. The one spin loop of the transports
 * and the executor's fast path.
 */
export function spinUntil(ready: () => boolean, spin: SpinPolicy): boolean {
  if (ready()) return true;
  if (spin.spinMs <= 0) return false;
  const yieldCore = spin.spinYields ? coreYield() : undefined;
  const start = performance.now();
  for (let i = 1; ; i++) {
    if (ready()) return true;
    if (spunOut(i, start, spin.spinMs, yieldCore)) return false;
  }
}

/** Tries of a spin that read no clock: most waits of a small call end within them. */
const UNTIMED_TRIES = 1024;

/**
 * spinUntil for the commonest wait, words[index] === value, without a predicate: a closure per
 * wait is garbage on every small call. Its first tries read no clock, which costs a call and
 * a number on the heap each time.
 */
export function spinUntilEquals(words: Int32Array, index: number, value: number, spin: SpinPolicy): boolean {
  if (Atomics.load(words, index) === value) return true;
  if (spin.spinMs <= 0) return false;
  if (!spin.spinYields) {
    for (let i = 0; i < UNTIMED_TRIES; i++) if (Atomics.load(words, index) === value) return true;
  }
  const yieldCore = spin.spinYields ? coreYield() : undefined;
  const start = performance.now();
  for (let i = 1; ; i++) {
    if (Atomics.load(words, index) === value) return true;
    if (spunOut(i, start, spin.spinMs, yieldCore)) return false;
  }
}

/** After failed try i of a spin begun at `start`: yields the core if it must; whether `ms` are spent. */
function spunOut(i: number, start: number, ms: number, yieldCore: (() => number) | undefined): boolean {
  if (yieldCore === undefined) return (i & 63) === 0 && performance.now() - start > ms;
  yieldCore();
  return (i & 7) === 0 && performance.now() - start > ms;
}

/**
 * Wakes the threads asleep on words[index], if any: `sleepers` (a word on the same cache line,
 * which the writer holds after its store) counts them. An Atomics.notify takes V8's process-wide
 * futex lock even when nobody sleeps, and two ranks notifying at once queue on it; a small call
 * notifies twice per rank, and asleep peers are rare.
 */
export function wake(words: Int32Array, index: number, sleepers: number): void {
  if (Atomics.load(words, sleepers) !== 0) Atomics.notify(words, index);
}

/**
 * Counts this thread among the sleepers of words[index] while `sleep` runs. The count is
 * raised before the word is read again: a writer that then finds no sleeper stored its value
 * before the raise (sequentially consistent atomics), so the sleeper sees that value and does
 * not sleep on the old one.
 */
function asSleeper<T>(words: Int32Array, sleepers: number, sleep: () => T): T {
  Atomics.add(words, sleepers, 1);
  try {
    return sleep();
  } finally {
    Atomics.sub(words, sleepers, 1);
  }
}

/**
 * Sleeps in Atomics.wait on words[index] until `ready` holds or `ms` have passed; true if it
 * came. Blocking frees this thread's core for the rank it waits for and wakes in ~10 us, against
 * 25-200 us for Atomics.waitAsync, but it stalls the thread's event loop, so only thread ranks
 * use it, and only for short spells before an asynchronous wait takes over. `sleepers` counts
 * the sleepers of words[index] for its writer's wake().
 */
export function blockUntil(
  words: Int32Array,
  index: number,
  sleepers: number,
  ready: () => boolean,
  ms: number,
): boolean {
  const end = performance.now() + ms;
  return asSleeper(words, sleepers, () => {
    for (;;) {
      const value = Atomics.load(words, index);
      if (ready()) return true;
      const left = end - performance.now();
      if (left <= 0) return false;
      Atomics.wait(words, index, value, left);
    }
  });
}

/**
 * Resolves once words[index] differs from `value`. Sleeps with Atomics.waitAsync so the event
 * loop stays free (timers, abort signals, messages), waking at least every ctx.sliceMs() to
 * let ctx.check() end the wait. `sleepers` counts the sleepers of words[index], as for blockUntil.
 */
export async function waitWhileEqual(
  words: Int32Array,
  index: number,
  sleepers: number,
  value: number,
  ctx: WaitContext,
): Promise<void> {
  if (spinUntil(() => Atomics.load(words, index) !== value, ctx)) return;
  Atomics.add(words, sleepers, 1);
  try {
    while (Atomics.load(words, index) === value) {
      ctx.check();
      const sliceMs = ctx.sliceMs();
      const result = Atomics.waitAsync(words, index, value, sliceMs);
      if (!result.async) continue;
      // A pending waitAsync neither keeps Node's event loop alive nor reliably times out on an
      // idle loop, so a real timer bounds the sleep: without it a rank whose only work is this
      // wait could exit mid-collective.
      let timer: NodeJS.Timeout | undefined;
      await Promise.race([
        result.value,
        new Promise<void>((resolve) => {
          timer = setTimeout(resolve, sliceMs);
        }),
      ]);
      clearTimeout(timer);
    }
  } finally {
    Atomics.sub(words, sleepers, 1);
  }
}
