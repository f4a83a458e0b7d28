import { ErrorCode, TscclError, invalidArgument } from '../errors.js';

/** Probes that know a call finished before its promise could settle (a progress engine's completion flags). */
const probes = new WeakMap<Promise<unknown>, () => boolean>();

/** Lets Work.track see that `call` finished on another thread, before this thread's event loop learns it. */
export function registerCompletionProbe(call: Promise<unknown>, finished: () => boolean): void {
  probes.set(call, finished);
}

/** `derived` (a `then` of `call`) finishes when `call` does: it gets the same probe. */
export function shareCompletionProbe(call: Promise<unknown>, derived: Promise<unknown>): void {
  const probe = probes.get(call);
  if (probe !== undefined) probes.set(derived, probe);
}

/**
 * A handle on an issued call, for code that checks on it while it runs (torch's
 * `async_op=True`): `const work = Work.track(comm.allReduce(x))`, later `await work.wait()`. When
 * the call resolves, its output holds
 * the result (and a staged array has been copied back); when it fails, `error` says why.
 */
export class Work<T = void> {
  private state: 'pending' | 'done' | 'failed' = 'pending';
  private cause: unknown;
  private readonly call: Promise<T>;
  private readonly finishedElsewhere: (() => boolean) | undefined;

  private constructor(call: Promise<T>) {
    this.call = call;
    this.finishedElsewhere = probes.get(call);
    call.then(
      () => {
        this.state = 'done';
      },
      (err: unknown) => {
        this.state = 'failed';
        this.cause = err;
      },
    );
  }

  static track<T>(call: Promise<T>): Work<T> {
    if (!(call instanceof Promise))
      throw invalidArgument('Work.track takes the promise a call returned', { argument: 'call' });
    return new Work(call);
  }

  /**
   * The call has ended, well or not. A call on a progress engine reports it here as soon as the
   * engine has finished, even while this thread computes; any other call once its promise has
   * settled, which takes this thread's event loop.
   */
  isCompleted(): boolean {
    return this.state !== 'pending' || (this.finishedElsewhere?.() ?? false);
  }

  /** The call resolved: its output holds the result. */
  isSuccess(): boolean {
    return this.state === 'done';
  }

  /** Why the call failed, once its promise has settled; undefined otherwise. */
  get error(): unknown {
    return this.cause;
  }

  /**
   * Resolves or fails as the call does. With `timeoutMs` or `signal`, only the wait ends early
   * (TSCCL_ERR_TIMEOUT, TSCCL_ERR_ABORTED): the call goes on, and `abort()` on its communicator ends it.
   */
  wait(options: { timeoutMs?: number; signal?: AbortSignal } = {}): Promise<T> {
    const { timeoutMs, signal } = options;
    if (timeoutMs === undefined && signal === undefined) return this.call;
    return new Promise<T>((resolve, reject) => {
      const timer =
        timeoutMs === undefined
          ? undefined
          : setTimeout(
              () =>
                reject(new TscclError(ErrorCode.TIMEOUT, `Waited ${timeoutMs} ms for a call that is still running`)),
              timeoutMs,
            );
      const onAbort = () =>
        reject(new TscclError(ErrorCode.ABORTED, 'The wait for a call was aborted; the call goes on'));
      if (signal?.aborted) onAbort();
      signal?.addEventListener('abort', onAbort, { once: true });
      this.call.then(resolve, reject).finally(() => {
        clearTimeout(timer);
        signal?.removeEventListener('abort', onAbort);
      });
    });
  }
}
