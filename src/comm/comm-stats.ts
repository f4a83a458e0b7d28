import { type RecoveryCounts, noRecoveries } from '../transport/transport.js';

/** What a communicator's links recovered from, as comm.stats() reports it. */
export interface CommStats {
  /** Totals over every peer. */
  readonly recoveries: RecoveryCounts;
  /** Per peer (communicator rank) that had anything to recover from. */
  readonly peers: readonly ({ readonly rank: number } & RecoveryCounts)[];
}

/** Totals and the peers with nonzero counts, from a transport's per-peer counts. */
export function commStats(byPeer: readonly RecoveryCounts[]): CommStats {
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
  return { recoveries, peers };
}
