/**
 * NCCL's own cost model for choosing an all-reduce's algorithm and protocol across servers
 * (src/graph/tuning.cc, NCCL 2.27: ncclTopoTuneModel and ncclTopoGetAlgoTime). NCCL runs what
 * this model rates fastest, not what is fastest, so a simulator that picks by its own prediction
 * runs a different algorithm wherever the two disagree: from four servers on NCCL's ring latency
 * grows with the ranks (2.4 ms on 32 DGX H100) and its NVLS tree is picked for calls that a ring
 * would move faster. The constants below are NCCL's; the graphs it searches are described by
 * NcclGraphs (nccl-graphs.ts derives them from a topology).
 */

export type NcclGeneration = 'ampere' | 'hopper' | 'blackwell';
export type NcclAlgorithm = 'ring' | 'tree' | 'nvls_tree';
export type NcclProtocol = 'LL' | 'LL128' | 'Simple';

/** What NCCL's topology search found, as its tuner reads it (struct ncclTopoGraph). */
export interface NcclGraphs {
  readonly generation: NcclGeneration;
  readonly ranks: number;
  readonly nodes: number;
  /** Ring and tree graphs: channels the search found (before NCCL doubles them), and their speed in GB/s. */
  readonly channels: number;
  readonly bw: number;
  /** NVLS graph: heads, and its speeds inside the server and through the NICs (GB/s); absent without one. */
  readonly nvls?: { readonly heads: number; readonly bwIntra: number; readonly bwInter: number };
}

const PROTOCOL_INDEX: Readonly<Record<NcclProtocol, number>> = { LL: 0, LL128: 1, Simple: 2 };

/** baseLat, and hwLat's NVLink and network rows (tuning.cc), per algorithm, LL / LL128 / Simple. */
const BASE_LATENCY: Readonly<Record<NcclAlgorithm, readonly number[]>> = {
  tree: [6.8, 14.0, 8.4],
  ring: [6.6, 14.0, 8.4],
  nvls_tree: [0, 0, 0],
};
const NVLINK_LATENCY: Readonly<Record<NcclAlgorithm, readonly number[]>> = {
  tree: [0.6, 1.25, 4.0],
  ring: [0.6, 1.9, 3.4],
  nvls_tree: [0, 0, 25],
};
const NET_LATENCY: Readonly<Record<NcclAlgorithm, readonly number[]>> = {
  tree: [5.0, 8.5, 14],
  ring: [2.7, 4.0, 14.0],
  nvls_tree: [0, 0, 14],
};

/**
 * Per generation, for 1 / 2 / more servers (tuning.cc perChMax*Bws; llMaxBws across servers is
 * its row for Intel hosts, as on DGX H100: the topologies do not say a host's CPU).
 */
const LL_MAX_BW: readonly number[] = [39.0, 39.0, 20.4];
const PER_CHANNEL: Readonly<
  Record<NcclGeneration, { ringLL128: readonly number[]; treeLL128: readonly number[]; tree: readonly number[] }>
> = {
  ampere: { ringLL128: [20.0, 20.0, 20.0], treeLL128: [20.0, 20.0, 20.0], tree: [24.0, 23.6, 17.8] },
  hopper: { ringLL128: [36.7, 36.7, 36.7], treeLL128: [36.7, 36.7, 29.0], tree: [38.7, 41.4, 36.0] },
  blackwell: {
    ringLL128: [2 * 36.7, 2 * 36.7, 2 * 36.7],
    treeLL128: [2 * 36.7, 2 * 36.7, 2 * 29.0],
    tree: [2 * 38.7, 2 * 41.4, 2 * 36.0],
  },
};

/** treeCorrectionFactor (tuning.cc): tree all-reduce's bandwidth by log2(bytes / 64), 64 B to 256 MiB. */
const TREE_CORRECTION: readonly (readonly number[])[] = [
  [1.0, 1.0, 1.0, 1.0, 0.9, 0.8, 0.7, 0.7, 0.7, 0.7, 0.6, 0.5, 0.4, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0, 1.0, 1.0, 1.0],
  [1.0, 1.0, 1.0, 1.0, 1.0, 0.9, 0.8, 0.8, 0.8, 0.7, 0.6, 0.6, 0.6, 0.6, 0.6, 0.6, 0.8, 0.9, 0.9, 0.9, 0.9, 1.0, 1.0],
  [0.9, 0.9, 0.9, 0.9, 0.9, 0.9, 0.9, 0.8, 0.7, 0.6, 0.6, 0.5, 0.5, 0.5, 0.5, 0.6, 0.7, 0.8, 0.7, 0.7, 0.8, 0.9, 0.9],
];

/** NCCL's network post overhead on x86 Intel and on Arm hosts (getNetOverhead), us. */
const NET_OVERHEAD_US = 1.0;

function log2i(n: number): number {
  let l = 0;
  for (let v = Math.floor(n); v > 1; v = Math.floor(v / 2)) l++;
  return l;
}

/** NCCL's algorithm bandwidth (GB/s) and latency (us) for an all-reduce, or undefined where it cannot run. */
export function ncclAllReduceCost(
  graphs: NcclGraphs,
  algorithm: NcclAlgorithm,
  protocol: NcclProtocol,
): { bw: number; latencyUs: number } | undefined {
  const { ranks, nodes, channels } = graphs;
  const p = PROTOCOL_INDEX[protocol];
  const sizeIndex = nodes <= 2 ? nodes - 1 : 2;
  const perChannel = PER_CHANNEL[graphs.generation];
  const steps = 2 * (ranks - 1);
  const ppn = ranks / nodes;
  // graph->latencyInter, which NCCL adds to this, is 0 on its InfiniBand and RoCE transport.
  const interLat = ppn === 1 ? NET_LATENCY.tree[p] : NET_LATENCY[algorithm][p];
  let latencyUs = BASE_LATENCY[algorithm][p];
  let bw: number;
  switch (algorithm) {
    case 'ring': {
      let busBw = channels * graphs.bw;
      if (protocol === 'LL') busBw = Math.min(LL_MAX_BW[sizeIndex], busBw * 0.5);
      if (protocol === 'LL128') busBw = Math.min(busBw * 0.92, channels * perChannel.ringLL128[sizeIndex]);
      bw = (busBw * ranks) / steps;
      const overhead = nodes > 1 ? NET_OVERHEAD_US * (protocol === 'Simple' ? 3 : 1) : 0;
      const intraLat = Math.max(NVLINK_LATENCY.ring[p], overhead);
      const interSteps = nodes > 1 ? 2 * (nodes - 1) : 0;
      latencyUs += (steps - interSteps) * intraLat + interSteps * interLat;
      break;
    }
    case 'tree': {
      let busBw = channels * graphs.bw;
      busBw = Math.min(busBw * 0.92, channels * perChannel.tree[sizeIndex]);
      if (protocol === 'LL') busBw = Math.min(busBw / 3.8, LL_MAX_BW[sizeIndex]);
      if (protocol === 'LL128') busBw = Math.min(busBw * (120 / 128), channels * perChannel.treeLL128[sizeIndex]);
      bw = busBw * 0.5;
      latencyUs += 2 * ((ppn - 1) * NVLINK_LATENCY.tree[p] + log2i(nodes) * interLat);
      break;
    }
    case 'nvls_tree': {
      const nvls = graphs.nvls;
      if (nvls === undefined || protocol !== 'Simple' || nodes < 2) return undefined;
      bw = nvls.heads * Math.min(nvls.bwIntra, nodes <= 2 ? nvls.bwInter : nvls.bwInter / 2) * (5 / 6);
      latencyUs += NVLINK_LATENCY.nvls_tree[p] + 2 * log2i(nodes) * interLat;
      break;
    }
  }
  return { bw, latencyUs };
}

/** NCCL's predicted time (us) of an all-reduce of `bytes` (ncclTopoGetAlgoTime, one operation), or undefined. */
export function ncclAllReduceTimeUs(
  graphs: NcclGraphs,
  choice: { algorithm: NcclAlgorithm; protocol: NcclProtocol },
  bytes: number,
): number | undefined {
  const cost = ncclAllReduceCost(graphs, choice.algorithm, choice.protocol);
  if (cost === undefined || cost.bw <= 0) return undefined;
  let { bw, latencyUs } = cost;
  const logSize = log2i(Math.floor(bytes / 64));
  if (choice.algorithm === 'tree' && bytes >= 64 && logSize < 23) {
    bw *= TREE_CORRECTION[PROTOCOL_INDEX[choice.protocol]][logSize];
  }
  // NCCL runs twice the channels its search found; a ring's Simple latency plateaus above 64 B a channel and rank.
  const runChannels = 2 * graphs.channels;
  if (
    choice.algorithm === 'ring' &&
    choice.protocol === 'Simple' &&
    graphs.nodes > 1 &&
    bytes / (runChannels * graphs.ranks) >= 64
  ) {
    latencyUs *= 1.4;
  }
  return latencyUs + bytes / (1000 * bw);
}

/** Of the candidates, the one NCCL's model rates fastest for `bytes`; undefined when it can price none. */
export function ncclChoice<T extends { algorithm: string; protocol: string }>(
  graphs: NcclGraphs,
  candidates: readonly T[],
  bytes: number,
): T | undefined {
  let best: { candidate: T; timeUs: number } | undefined;
  for (const candidate of candidates) {
    if (!isNcclAlgorithm(candidate.algorithm) || !isNcclProtocol(candidate.protocol)) continue;
    const timeUs = ncclAllReduceTimeUs(graphs, { algorithm: candidate.algorithm, protocol: candidate.protocol }, bytes);
    if (timeUs !== undefined && (best === undefined || timeUs < best.timeUs)) best = { candidate, timeUs };
  }
  return best?.candidate;
}

function isNcclAlgorithm(name: string): name is NcclAlgorithm {
  return name === 'ring' || name === 'tree' || name === 'nvls_tree';
}

function isNcclProtocol(name: string): name is NcclProtocol {
  return name === 'LL' || name === 'LL128' || name === 'Simple';
}
