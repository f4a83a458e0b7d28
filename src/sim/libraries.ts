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
 * - RCCL (ROCm/rccl): NCCL's algorithms, chosen by its own tuner; and on one node of 8 MI300X,
 *   for the all-reduces its algorithm files take, MSCCL's all-pairs, which is tsccl's direct
 *   (libraryFixedChoice).
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
  rccl: { ...NCCL, allReduce: ['ring', 'tree'] },
};

/**
 * The candidates a library's tuner would choose among for this collective, of those the
 * topology offers (all of them without a library).
 */
export function libraryAlgorithms(
  library: CollectiveLibrary | undefined,
  collective: Collective,
  valid: readonly string[],
): string[] {
  if (library === undefined) return [...valid];
  const runs = LIBRARY_ALGORITHMS[library][collective] ?? [];
  const chosen = valid.filter((a) => runs.includes(a));
  return chosen.length > 0 ? chosen : [...valid];
}

/**
 * MSCCL's all-pairs all-reduce files that RCCL 2.21.5 (ROCm 6.3) loads for 8 GPUs
 * (tools/msccl-algorithms/allreduce-allpairs-8n-ll-32tb, -ll-64tb and -simple, in place and out
 * of place). RCCL runs one, before its tuner is asked, for a call whose bytes lie in its range
 * and whose element count is a multiple of its chunks per loop (src/misc/msccl/msccl_lifecycle.cc,
 * mscclInternalSchedulerSelectAlgo); any other call goes to its tuner's ring or tree. So a 512 B
 * all-reduce (128 floats) runs the ring, and 1 KiB runs all-pairs over LL.
 */
const RCCL_ALL_PAIRS_FILES: readonly { protocol: string; chunksPerLoop: number; minBytes: number; maxBytes: number }[] =
  [
    { protocol: 'LL', chunksPerLoop: 256, minBytes: 0, maxBytes: 65536 },
    { protocol: 'LL', chunksPerLoop: 512, minBytes: 65537, maxBytes: 524287 },
    { protocol: 'Simple', chunksPerLoop: 512, minBytes: 524288, maxBytes: 16777216 },
  ];
const RCCL_ALL_PAIRS_RANKS = 8;

/**
 * The algorithm and protocol a library runs for this call whatever its tuner would say
 * (RCCL's MSCCL files, above), or undefined where its tuner chooses.
 */
export function libraryFixedChoice(
  library: CollectiveLibrary | undefined,
  collective: Collective,
  call: { ranks: number; hosts: number; count: number; bytes: number },
): { algorithm: string; protocol: string } | undefined {
  if (library !== 'rccl' || collective !== 'allReduce') return undefined;
  if (call.ranks !== RCCL_ALL_PAIRS_RANKS || call.hosts !== 1 || call.count <= 0) return undefined;
  const file = RCCL_ALL_PAIRS_FILES.find(
    (f) => call.bytes >= f.minBytes && call.bytes <= f.maxBytes && call.count % f.chunksPerLoop === 0,
  );
  return file === undefined ? undefined : { algorithm: 'direct', protocol: file.protocol };
}
