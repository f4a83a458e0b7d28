import { LINK_KINDS, type LinkKind } from '../topology/catalog.js';
import type { TopologyGraph } from '../topology/topology-graph.js';
import type { NcclGeneration, NcclGraphs } from './nccl-tuner.js';
import { NvlsTreeLayout } from './nvls-tree-layout.js';

/** The speeds NCCL's topology search tries, GB/s, highest first (src/graph/search.cc, 2.27). */
const SPEEDS: Readonly<Record<NcclGeneration, { intra: readonly number[]; inter: readonly number[] }>> = {
  hopper: {
    intra: [60, 50, 40, 30, 24, 20, 15, 12, 11, 6, 3],
    inter: [48, 45, 42, 40, 30, 24, 22, 20, 17.5, 15, 12, 6, 3, 2.4, 1.2, 0.24, 0.12],
  },
  blackwell: {
    intra: [90, 80, 70, 60, 50, 40, 30, 24, 20, 19, 18],
    inter: [96, 48, 45.1, 42, 40, 30, 24, 22, 20, 17.5, 15, 12, 6, 3, 2.4, 1.2, 0.24, 0.12],
  },
};

const GENERATIONS: Readonly<Record<string, NcclGeneration>> = { nvswitch3: 'hopper', nvswitch4: 'blackwell' };

/** The highest speed of `speeds` at or below `limit`, or the lowest one. */
function speedAtMost(speeds: readonly number[], limit: number): number {
  return speeds.find((s) => s <= limit) ?? speeds[speeds.length - 1];
}

/** NCCL's most ring channels from its search (MAXCHANNELS / 2, src/init.cc). */
const MAX_RING_CHANNELS = 32;

function ringSearch(
  inter: readonly number[],
  lineGBs: number,
  nvlinkGBs: number,
  nics: number,
  gpus: number,
): { channels: number; bw: number } {
  let best = { channels: 1, bw: speedAtMost(inter, lineGBs) };
  for (let channels = 1; channels <= Math.min(nics, MAX_RING_CHANNELS); channels++) {
    const bw = speedAtMost(inter, Math.min(lineGBs, nvlinkGBs / ((channels * (gpus - 1)) / gpus)));
    if (channels * bw > best.channels * best.bw) best = { channels, bw };
  }
  return best;
}

/**
 * What NCCL's topology search finds on servers where its NVLS tree can run (NVLink SHARP
 * switches, a NIC for every GPU), for its tuner (nccl-tuner.ts); undefined elsewhere, and where
 * the network's plugin brings its own tuner (AWS's EFA), where the simulator keeps choosing by its
 * own prediction. The search itself is not replayed; these rules
 * give what it settles on:
 * - ring and tree: the channels (at most one per NIC, and 32) and speed that move the most, each
 *   channel at most a NIC's line rate, and all of them within a GPU's NVLink bandwidth, which
 *   every channel's ring crosses on all but one of the server's GPUs;
 * - NVLS: a head per NIC (nvls-tree-layout.ts); inside the server the highest speed at which the
 *   heads plus one fit the GPU's NVLink bandwidth (the search charges a head GPU twice); through
 *   the NIC that speed raised while it stays under twice the one inside and the NIC carries it.
 */
export function ncclGraphs(graph: TopologyGraph, rankDevices: readonly number[]): NcclGraphs | undefined {
  const layout = NvlsTreeLayout.of(graph, rankDevices);
  if (layout === undefined) return undefined;
  const generation = GENERATIONS[layout.switchKind.id];
  if (generation === undefined) return undefined;
  const speeds = SPEEDS[generation];
  const [server, other] = layout.servers;
  const route = graph.route(server.heads[0], other.heads[0]);
  let lineGBs = Infinity;
  for (const link of route) {
    const { kind, family, capacity } = graph.link(link);
    const catalog = (LINK_KINDS as Readonly<Record<string, LinkKind | undefined>>)[kind];
    if (family !== 'network' || catalog === undefined) continue;
    if (catalog.pluginTuner) return undefined;
    // NCCL reads a NIC's line rate, not what it sustains.
    lineGBs = Math.min(lineGBs, capacity / 1000 / catalog.efficiency);
  }
  const nvlinkGBs =
    graph
      .linksFrom(server.heads[0])
      .filter((l) => l.family === 'scale-up')
      .reduce((sum, l) => sum + l.capacity, 0) / 1000;
  const ring = ringSearch(speeds.inter, lineGBs, nvlinkGBs, layout.heads, layout.perServer);
  const nicSpeed = speedAtMost(speeds.inter, lineGBs);
  const bwIntra = speedAtMost(speeds.intra, nvlinkGBs / (layout.heads + 1));
  const raised = [...speeds.inter].reverse().find((s) => s >= 2 * bwIntra) ?? speeds.inter[0];
  return {
    generation,
    ranks: rankDevices.length,
    nodes: layout.servers.length,
    channels: ring.channels,
    bw: ring.bw,
    nvls: { heads: layout.heads, bwIntra, bwInter: Math.max(bwIntra, Math.min(nicSpeed, raised)) },
  };
}
