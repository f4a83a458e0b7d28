import type { Collective } from '../algorithms/schedule.js';

/**
 * The collective libraries a topology's accelerators run, and which of tsccl's schedules stand
 * for the algorithms each library chooses among. Published measurements are of these libraries,
 * so `tsccl sim` predicts what they would run unless `--algo` asks for another of tsccl's
 * schedules (direct all-reduce on an NVSwitch server, for one, is faster than NCCL's ring at
 * 1 MB, but NCCL does not run it, and a DGX A100 measures the ring's 36 GB/s there, not 71).
 *
 * - NCCL (NVIDIA/nccl, src/device, enqueue.cc): all-reduce by ring, NVLS where the NVSwitch
 *   reduces, and tree (a chain in each server, a double binary tree across servers: tsccl's
 *   `tree` on two copies of every channel); all-gather, reduce-scatter, broadcast and reduce by ring
 *   (chains for the rooted two); all-to-all, gather and scatter as grouped point-to-point sends
 *   and receives to every peer at once.
 * - RCCL (ROCm/rccl): NCCL's algorithms, and on one MI300X node MSCCL's all-pairs all-reduce
 *   (tools/msccl-algorithms/allreduce-allpairs-8n-simple-op.xml), which is tsccl's direct: on
 *   one server only. RCCL runs it between 512 KiB and 16 MiB; here it competes at every size.
 */
export type CollectiveLibrary = 'nccl' | 'rccl';

const NCCL: Readonly<Partial<Record<Collective, readonly string[]>>> = {
  allReduce: ['ring', 'nvls', 'tree', 'nvls_tree'],
  allGather: ['ring'],
  reduceScatter: ['ring'],
  broadcast: ['ring'],
  reduce: ['ring'],
  allToAll: ['direct'],
  gather: ['linear'],
  scatter: ['linear'],
};

const LIBRARY_ALGORITHMS: Readonly<
  Record<CollectiveLibrary, Readonly<Partial<Record<Collective, readonly string[]>>>>
> = {
  nccl: NCCL,
  rccl: { ...NCCL, allReduce: ['ring', 'tree', 'direct'] },
};

/** Algorithms a library runs only among the GPUs of one server. */
const ONE_SERVER_ONLY: Readonly<Record<CollectiveLibrary, readonly string[]>> = { nccl: [], rccl: ['direct'] };

/**
 * The candidates a library would choose among for this collective on ranks spread over `hosts`
 * servers, of those the topology offers (all of them without a library).
 */
export function libraryAlgorithms(
  library: CollectiveLibrary | undefined,
  collective: Collective,
  valid: readonly string[],
  hosts: number,
): string[] {
  if (library === undefined) return [...valid];
  const runs = LIBRARY_ALGORITHMS[library][collective] ?? [];
  const chosen = valid.filter((a) => runs.includes(a) && (hosts === 1 || !ONE_SERVER_ONLY[library].includes(a)));
  return chosen.length > 0 ? chosen : [...valid];
}
