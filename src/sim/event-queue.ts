/**
 * A min-heap of timed callbacks. Equal times run in insertion order, so a simulation is
 * deterministic: the same schedules on the same topology give the same result bit for bit.
 */
export class EventQueue {
  private times: number[] = [];
  private seqs: number[] = [];
  private actions: (() => void)[] = [];
  private nextSeq = 0;
  now = 0;

  get size(): number {
    return this.times.length;
  }

  at(time: number, action: () => void): void {
    const times = this.times;
    const seqs = this.seqs;
    const actions = this.actions;
    let i = times.length;
    const seq = this.nextSeq++;
    times.push(time);
    seqs.push(seq);
    actions.push(action);
    while (i > 0) {
      const p = (i - 1) >> 1;
      if (times[p] < time || (times[p] === time && seqs[p] < seq)) break;
      times[i] = times[p]; seqs[i] = seqs[p]; actions[i] = actions[p];
      i = p;
    }
    times[i] = time; seqs[i] = seq; actions[i] = action;
  }

  /** Runs events in time order until none is left. */
  run(): void {
    while (this.times.length > 0) {
      const time = this.times[0];
      const action = this.actions[0];
      this.pop();
      this.now = time;
      action();
    }
  }

  private pop(): void {
    const times = this.times;
    const seqs = this.seqs;
    const actions = this.actions;
    const lastTime = times.pop()!;
    const lastSeq = seqs.pop()!;
    const lastAction = actions.pop()!;
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
      times[i] = times[m]; seqs[i] = seqs[m]; actions[i] = actions[m];
      i = m;
    }
    times[i] = lastTime; seqs[i] = lastSeq; actions[i] = lastAction;
  }
}
