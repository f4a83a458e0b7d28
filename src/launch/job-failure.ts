/**
 * What both launchers do when ranks fail: remember the first failure (the one the job's error
 * names), stop the ranks still running once the grace period is over, and when the launcher's
 * own signal aborts the job (recorded as rank -1), ask them to end at once (`terminateAll`,
 * by default `stopAll`) and stop those still running after the grace period.
 */
export class JobFailure {
  /** The first rank that failed, -1 if the signal aborted the job, undefined while all is well. */
  first: number | undefined;
  private readonly stopAll: () => void;
  private readonly terminateAll: () => void;
  private readonly graceMs: number;
  private readonly signal: AbortSignal | undefined;
  private readonly onAbort = () => {
    this.rankFailed(-1);
    this.terminateAll();
  };
  private timer: NodeJS.Timeout | undefined;

  constructor(options: {
    stopAll: () => void;
    terminateAll?: () => void;
    graceMs: number;
    signal: AbortSignal | undefined;
  }) {
    this.stopAll = options.stopAll;
    this.terminateAll = options.terminateAll ?? options.stopAll;
    this.graceMs = options.graceMs;
    this.signal = options.signal;
    this.signal?.addEventListener('abort', this.onAbort, { once: true });
  }

  rankFailed(rank: number): void {
    if (this.first !== undefined) return;
    this.first = rank;
    this.timer = setTimeout(this.stopAll, this.graceMs);
  }

  /** Once every rank has ended. */
  dispose(): void {
    clearTimeout(this.timer);
    this.signal?.removeEventListener('abort', this.onAbort);
  }
}
