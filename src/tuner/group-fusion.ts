/** Where a communicator's ranks are, as far as fusing a group's all-reduces goes: every rank sees it alike. */
export interface FusionSite {
  readonly transport: 'shm' | 'tcp';
  readonly hostCount: number;
  /** Thread ranks that outnumber the cores. */
  readonly oversubscribed: boolean;
}

/**
 * The largest all-reduce that comm.group fuses with the group's others into one call. Fusing
 * copies a tensor into one arena buffer and back, which costs its bytes twice; issued alone, it
 * pays a call's hand-offs instead. Measured with arrays from comm.alloc, the case where fusing
 * alone adds copies (bench/group/fusion.mjs, docs/tuning.md "Fusing a group's all-reduces"):
 * between 2 thread ranks fusing wins at 64 KiB and loses at 256 KiB; between thread ranks that
 * outnumber the cores, whose every hand-off may wait for a descheduled peer, it wins up to
 * 1 MiB and loses at 2 MiB; over TCP it wins at 256 KiB and loses at 1 MiB. The limit depends
 * only on what every rank of the communicator sees alike, so all ranks cut a group the same way.
 */
export function groupFusionMaxBytes(site: FusionSite): number {
  if (site.transport === 'tcp' || site.hostCount > 1) return 256 * 1024;
  return site.oversubscribed ? 1024 * 1024 : 128 * 1024;
}
