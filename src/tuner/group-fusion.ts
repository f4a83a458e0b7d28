/** Where a communicator's ranks are, as far as fusing a group's all-reduces goes: every rank sees it alike. */
export interface FusionSite {
  readonly transport: 'shm' | 'tcp';
  readonly hostCount: number;
  /** Thread ranks that outnumber the cores. */
  readonly oversubscribed: boolean;
}

/**
 * The largest all-reduce that comm.group fuses with the group's others into one call. Fusing
 * copies a tensor into one arena buffer and back; issued alone, it pays a call's hand-offs
 * instead. Each limit sits between the largest size where fusing was measured to win and the
 * smallest where it lost (docs/tuning.md, `groupFusionMaxBytes`). It depends only on what every
 * rank of the communicator sees alike, so all ranks cut a group the same way.
 */
export function groupFusionMaxBytes(site: FusionSite): number {
  if (site.transport === 'tcp' || site.hostCount > 1) return 256 * 1024;
  return site.oversubscribed ? 1024 * 1024 : 128 * 1024;
}
