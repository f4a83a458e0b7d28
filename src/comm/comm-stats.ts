import { type RecoveryCounts, noRecoveries } from '../transport/transport.js';

/** What a communicator's links recovered from, as comm.stats() reports it. */
export interface CommStats {
  /** Totals over every peer. */
  readonly recoveries: RecoveryCounts;
  /** Per peer (communicator rank) that had anything to recover from. */
  readonly peers: readonly ({ readonly rank: number } & RecoveryCounts)[];
  /** Collectives run again from their input over new connections after a failure (operation retry). */
  readonly retries: number;
}

/** Totals and the peers with nonzero counts, from a transport's per-peer counts. */
export function commStats(byPeer: readonly RecoveryCounts[], retries = 0): CommStats {
  const recoveries = noRecoveries();
  const peers: ({ rank: number } & RecoveryCounts)[] = [];
  byPeer.forEach((counts, rank) => {
    let any = false;
    for (const key of Object.keys(recoveries) as (keyof RecoveryCounts)[]) {
      recoveries[key] += counts[key];
      any ||= counts[key] > 0;
    }
    if (any) peers.push({ rank, ...counts });
  });
  return { recoveries, peers, retries };
}

/** Per peer, the counts of two sets of links summed (those a retry replaced, and their successors). */
export function addRecoveries(a: readonly RecoveryCounts[], b: readonly RecoveryCounts[]): RecoveryCounts[] {
  return Array.from({ length: Math.max(a.length, b.length) }, (_, peer) => {
    const sum = noRecoveries();
    for (const key of Object.keys(sum) as (keyof RecoveryCounts)[])
      sum[key] = (a[peer]?.[key] ?? 0) + (b[peer]?.[key] ?? 0);
    return sum;
  });
}
