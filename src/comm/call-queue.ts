/** The promise of every call that finished before returning: settled, shared, never rejected. */
export const DONE: Promise<void> = Promise.resolve();

/**
 * Runs a communicator's collectives one after another in call order, as on an NCCL stream. An
 * idle queue starts a call at once (a small call may then finish before its method returns, and
 * hand back the settled DONE); otherwise it waits for the calls in flight.
 */
export class CallQueue {
  private chain: Promise<unknown> = DONE;
  /** Calls queued or running. */
  private inFlight = 0;

  /** Starts or queues `go`; every call it makes must report `ended()` once, before its promise settles. */
  enqueue(go: () => Promise<void>): Promise<void> {
    if (this.inFlight === 0) {
      this.beginNow();
      return this.begun(go());
    }
    this.inFlight++;
    return this.begun(this.chain.then(go));
  }

  /** Whether a call queued now would start at once. */
  get idle(): boolean {
    return this.inFlight === 0;
  }

  /**
   * enqueue in two steps, for a caller that starts the call itself on an idle queue (a small
   * call, without a closure): beginNow, then the call, then begun with its promise.
   */
  beginNow(): void {
    this.inFlight++;
  }

  /** The promise of a call just started or queued: the queue's tail until the next one. */
  begun(run: Promise<void>): Promise<void> {
    this.chain = run === DONE ? DONE : run.catch(() => undefined);
    return run;
  }

  /** A call ended: called before its promise settles, so a caller that awaited it finds the queue idle. */
  ended(): void {
    this.inFlight--;
  }

  /** Settles once every call queued so far has. */
  drained(): Promise<unknown> {
    return this.chain;
  }
}
