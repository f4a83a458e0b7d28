/**
 * The cores that CPU rank threads share. When ranks outnumber cores, a rank that has work (a
 * hand-off to take, a buffer to reduce) waits for a core as well as for its message: each grant
 * goes to the core that frees first, in the order the work was asked for. With as many cores as
 * ranks nothing ever waits, and a rank's work costs just its own time.
 */
export class CorePool {
  private readonly freeAt: Float64Array;

  constructor(cores: number) {
    this.freeAt = new Float64Array(Math.max(1, Math.floor(cores)));
  }

  /** When `us` of work asked for at `now` ends. */
  finish(now: number, us: number): number {
    const freeAt = this.freeAt;
    let core = 0;
    for (let i = 1; i < freeAt.length; i++) if (freeAt[i] < freeAt[core]) core = i;
    const end = Math.max(now, freeAt[core]) + us;
    freeAt[core] = end;
    return end;
  }
}

/** The pool of each rank device: one per host of CPU ranks (`cores` each), none where ranks do not share cores. */
export function corePools(
  rankDevices: readonly number[],
  hosts: readonly number[],
  cores: number | undefined,
): Map<number, CorePool> {
  const byDevice = new Map<number, CorePool>();
  if (cores === undefined) return byDevice;
  const byHost = new Map<number, CorePool>();
  rankDevices.forEach((device, r) => {
    let pool = byHost.get(hosts[r]);
    if (pool === undefined) {
      pool = new CorePool(cores);
      byHost.set(hosts[r], pool);
    }
    byDevice.set(device, pool);
  });
  return byDevice;
}
