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
    const idle = this.inFlight === 0;
    this.inFlight++;
    const run = idle ? go() : this.chain.then(go);
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
