/** Calls issued on one path between two changes of path, and how many of them have not settled. */
class Segment {
  outstanding = 0;
  private readonly waiters: (() => void)[] = [];

  add<T>(call: Promise<T>): Promise<T> {
    this.outstanding++;
    const done = () => {
      if (--this.outstanding === 0) for (const wake of this.waiters.splice(0)) wake();
    };
    call.then(done, done);
    return call;
  }

  drained(): Promise<void> {
    return this.outstanding === 0 ? Promise.resolve() : new Promise((wake) => this.waiters.push(wake));
  }
}

export type LaneName = 'inline' | 'engine';

/**
 * Keeps one communicator's calls in the order they were issued across its two paths (the rank's
 * thread and its engine), as calls on one CUDA stream are: each path runs its own calls in order,
 * and the first call after a change of path starts only once every call before it has settled,
 * so a result is never read before it is written. Calls that stay on one path pay a count.
 */
export class CallLanes {
  private lane: LaneName | undefined;
  /** The calls since the last change of path; each waited for the gate, so its end implies the gate's. */
  private segment = new Segment();
  /** Settles when the calls before the last change of path have; undefined once they have. */
  private gate: Promise<void> | undefined;

  /** Runs `start` on `lane` after the calls it must follow; its promise settles with the call. */
  issue<T>(lane: LaneName, start: () => Promise<T>): Promise<T> {
    if (lane !== this.lane) {
      this.lane = lane;
      // Only the calls issued before this one: a gate on later calls could wait on itself.
      if (this.segment.outstanding > 0) {
        const gate = this.segment.drained();
        this.gate = gate;
        void gate.then(() => {
          if (this.gate === gate) this.gate = undefined;
        });
      } else this.gate = undefined;
      this.segment = new Segment();
    }
    const run = () => {
      try {
        return start();
      } catch (err) {
        return Promise.reject(err);
      }
    };
    return this.segment.add(this.gate === undefined ? run() : this.gate.then(run));
  }

  /** Settles once every call issued so far has. */
  drained(): Promise<void> {
    return this.gate === undefined ? this.segment.drained() : this.gate.then(() => this.segment.drained());
  }
}
