import type { RecoveryCounts } from '../transport/transport.js';

/** What a communicator's links recovered from, as comm.stats() reports it. */
export interface CommStats {
  /** Totals over every peer. */
  readonly recoveries: RecoveryCounts;
  /** Per peer (communicator rank) that had anything to recover from. */
  readonly peers: readonly ({ readonly rank: number } & RecoveryCounts)[];
}

/** Totals and the peers with nonzero counts, from a transport's per-peer counts. */
export function commStats(byPeer: readonly RecoveryCounts[]): CommStats {
  const recoveries: RecoveryCounts = { corrupted: 0, requested: 0, recovered: 0, resent: 0, garbled: 0 };
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
