type Action = (arg: never) => void;

/**
 * A min-heap of timed calls `fn(arg)`. Equal times run in insertion order, so a simulation is
 * deterministic: the same schedules on the same topology give the same result bit for bit.
 * Taking a function and its argument (rather than a closure) keeps the millions of events of a
 * large simulation from allocating one closure each.
 */
export class EventQueue {
  private times: number[] = [];
  private seqs: number[] = [];
  private actions: Action[] = [];
  private args: unknown[] = [];
  private nextSeq = 0;
  now = 0;

  get size(): number {
    return this.times.length;
  }

  at<T>(time: number, action: (arg: T) => void, arg?: T): void {
    const times = this.times;
    const seqs = this.seqs;
    const actions = this.actions;
    const args = this.args;
    let i = times.length;
    const seq = this.nextSeq++;
    times.push(time);
    seqs.push(seq);
    actions.push(action as Action);
    args.push(arg);
    while (i > 0) {
      const p = (i - 1) >> 1;
      if (times[p] < time || (times[p] === time && seqs[p] < seq)) break;
      times[i] = times[p];
      seqs[i] = seqs[p];
      actions[i] = actions[p];
      args[i] = args[p];
      i = p;
    }
    times[i] = time;
    seqs[i] = seq;
    actions[i] = action as Action;
    args[i] = arg;
  }

  /** Runs events in time order until none is left; `check`, if given, runs every `every` events (it may throw to stop). */
  run(check?: () => void, every = 8192): void {
    // Without a check the countdown never reaches zero (Infinity stays Infinity).
    let countdown = check === undefined ? Number.POSITIVE_INFINITY : every;
    while (this.times.length > 0) {
      if (--countdown === 0) {
        countdown = every;
        check!();
      }
      const time = this.times[0];
      const action = this.actions[0] as (arg: unknown) => void;
      const arg = this.args[0];
      this.pop();
      this.now = time;
      action(arg);
    }
  }

  private pop(): void {
    const times = this.times;
    const seqs = this.seqs;
    const actions = this.actions;
    const args = this.args;
    const lastTime = times.pop()!;
    const lastSeq = seqs.pop()!;
    const lastAction = actions.pop()!;
    const lastArg = args.pop();
    const n = times.length;
    if (n === 0) return;
    let i = 0;
    for (;;) {
      const l = 2 * i + 1;
      if (l >= n) break;
      const r = l + 1;
      let m = l;
      if (r < n && (times[r] < times[l] || (times[r] === times[l] && seqs[r] < seqs[l]))) m = r;
      if (lastTime < times[m] || (lastTime === times[m] && lastSeq < seqs[m])) break;
      times[i] = times[m];
      seqs[i] = seqs[m];
      actions[i] = actions[m];
      args[i] = args[m];
      i = m;
    }
    times[i] = lastTime;
    seqs[i] = lastSeq;
    actions[i] = lastAction;
    args[i] = lastArg;
  }
}
