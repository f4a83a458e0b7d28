/** Where a compressed all-reduce compresses: one rank of each host talks across hosts, a host's ranks among themselves uncompressed. */
export interface CompressionHierarchy {
  /** The ranks of this rank's host, in rank order, and this rank's index among them. */
  readonly local: readonly number[];
  readonly localIndex: number;
  /** The rank at this rank's local index on every host, in host order, and this rank's index among them. */
  readonly cross: readonly number[];
  readonly crossIndex: number;
}

/**
 * The hierarchy of a compressed all-reduce on `hosts` (a host index per rank), or undefined for
 * the flat schedule. Ranks spread over several hosts with the same number L > 1 on each reduce
 * within their host first (shared memory or local TCP, uncompressed), so each compresses 1 / L
 * of the data across hosts: the flat schedule sends L times the bytes over the links between
 * hosts, the slow ones compression is for. One rank per host, or unequal hosts: flat.
 */
export function compressionHierarchy(
  hosts: readonly number[] | undefined,
  rank: number,
): CompressionHierarchy | undefined {
  if (hosts === undefined) return undefined;
  const members: number[][] = [];
  hosts.forEach((h, r) => {
    members[h] ??= [];
    members[h].push(r);
  });
  const perHost = members[0]?.length ?? 0;
  if (members.length < 2 || perHost < 2 || members.some((m) => m === undefined || m.length !== perHost))
    return undefined;
  const local = members[hosts[rank]];
  const localIndex = local.indexOf(rank);
  const cross = members.map((m) => m[localIndex]);
  return { local, localIndex, cross, crossIndex: hosts[rank] };
}
