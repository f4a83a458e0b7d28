import type { AwsPlatform } from './aws-region-tuner.js';
import { GraphRanksMemo } from './graph-ranks-memo.js';
import { LINK_KINDS, type LinkKind } from '../topology/catalog.js';
import type { TopologyGraph } from '../topology/topology-graph.js';
import type { NcclGeneration, NcclGraphs } from './nccl-tuner.js';
import { NvlsTreeLayout } from './nvls-tree-layout.js';
import { sharedSwitch } from './reducing-switch.js';
import { nicHeads, serversWithNics } from './servers-with-nics.js';

/** The speeds NCCL's topology search tries, GB/s, highest first (src/graph/search.cc, 2.27). */
const SPEEDS: Readonly<Record<NcclGeneration, { intra: readonly number[]; inter: readonly number[] }>> = {
  ampere: {
    intra: [40, 30, 20, 18, 15, 12, 10, 9, 7, 6, 5, 4, 3],
    inter: [48, 30, 28, 24, 20, 18, 15, 12, 10, 9, 7, 6, 5, 4, 3, 2.4, 1.2, 0.24, 0.12],
  },
  hopper: {
    intra: [60, 50, 40, 30, 24, 20, 15, 12, 11, 6, 3],
    inter: [48, 45, 42, 40, 30, 24, 22, 20, 17.5, 15, 12, 6, 3, 2.4, 1.2, 0.24, 0.12],
  },
  blackwell: {
    intra: [90, 80, 70, 60, 50, 40, 30, 24, 20, 19, 18],
    inter: [96, 48, 45.1, 42, 40, 30, 24, 22, 20, 17.5, 15, 12, 6, 3, 2.4, 1.2, 0.24, 0.12],
  },
};

const GENERATIONS: Readonly<Record<string, NcclGeneration | undefined>> = {
  nvswitch2: 'ampere',
  nvswitch3: 'hopper',
  nvswitch4: 'blackwell',
};

/** Servers of an NVSwitch generation NCCL's tuner knows, each GPU with a NIC: each server's ranks and its first GPU on each NIC. */
interface NcclServers {
  readonly generation: NcclGeneration;
  readonly servers: readonly { readonly ranks: readonly number[]; readonly nicHeads: readonly number[] }[];
}

function ncclServers(graph: TopologyGraph, rankDevices: readonly number[]): NcclServers | undefined {
  const groups = serversWithNics(graph, rankDevices);
  if (groups === undefined) return undefined;
  let generation: NcclGeneration | undefined;
  const servers = [];
  for (const ranks of groups) {
    const sw = sharedSwitch(graph, ranks, (switchKind) => GENERATIONS[switchKind] !== undefined);
    const kind = sw === undefined ? undefined : GENERATIONS[graph.devices[sw].switchKind!];
    if (kind === undefined || (generation !== undefined && kind !== generation)) return undefined;
    generation = kind;
    servers.push({ ranks, nicHeads: nicHeads(graph, ranks) });
  }
  return generation === undefined ? undefined : { generation, servers };
}

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
 * What NCCL's topology search finds on servers of NVSwitch GPUs (A100, H100, B200/GB200) with a
 * NIC for every GPU, for its tuner (nccl-tuner.ts); undefined elsewhere, and where the network's
 * plugin brings its own tuner (AWS's EFA) on a platform the simulator does not know it for, where
 * the simulator keeps choosing by its own prediction. The search itself is not replayed; these
 * rules give what it settles on:
 * - ring and tree: the channels (at most one per NIC, and 32) and speed that move the most, each
 *   channel at most a NIC's line rate, and all of them within a GPU's NVLink bandwidth, which
 *   every channel's ring crosses on all but one of the server's GPUs;
 * - NVLS, where `nvls` offers NCCL's NVLS tree: a head per NIC (nvls-tree-layout.ts); inside the
 *   server the highest speed at which the heads plus one fit the GPU's NVLink bandwidth (the
 *   search charges a head GPU twice); through the NIC that speed raised while it stays under
 *   twice the one inside and the NIC carries it.
 */
export function ncclGraphs(
  graph: TopologyGraph,
  rankDevices: readonly number[],
  nvls: boolean,
): NcclGraphs | undefined {
  return (nvls ? withNvls : withoutNvls).get(graph, rankDevices, () => searchGraphs(graph, rankDevices, nvls));
}

const withNvls = new GraphRanksMemo<NcclGraphs | undefined>();
const withoutNvls = new GraphRanksMemo<NcclGraphs | undefined>();

function searchGraphs(graph: TopologyGraph, rankDevices: readonly number[], nvls: boolean): NcclGraphs | undefined {
  const found = ncclServers(graph, rankDevices);
  if (found === undefined) return undefined;
  const { generation, servers } = found;
  const speeds = SPEEDS[generation];
  const route = graph.route(servers[0].nicHeads[0], servers[1].nicHeads[0]);
  // A plugin's own tuner decides; on the platforms AWS's knows, it hands two nodes or fewer, and a
  // call outside its regions, back to NCCL's (aws-region-tuner.ts).
  const handedBack = awsPlatform(graph, found) !== undefined;
  let lineGBs = Infinity;
  for (const link of route) {
    const { kind, family, capacity } = graph.link(link);
    const catalog = linkKind(kind);
    if (family !== 'network' || catalog === undefined) continue;
    if (catalog.pluginTuner && !handedBack) return undefined;
    // NCCL reads a NIC's line rate, not what it sustains.
    lineGBs = Math.min(lineGBs, capacity / 1000 / catalog.efficiency);
  }
  const nvlinkGBs =
    graph
      .linksFrom(servers[0].nicHeads[0])
      .filter((l) => l.family === 'scale-up')
      .reduce((sum, l) => sum + l.capacity, 0) / 1000;
  const nics = Math.min(...servers.map((s) => s.nicHeads.length));
  const ring = ringSearch(speeds.inter, lineGBs, nvlinkGBs, nics, servers[0].ranks.length);
  const graphs = {
    generation,
    ranks: rankDevices.length,
    nodes: servers.length,
    channels: ring.channels,
    bw: ring.bw,
  };
  const layout = nvls ? NvlsTreeLayout.of(graph, rankDevices) : undefined;
  if (layout === undefined) return graphs;
  const nicSpeed = speedAtMost(speeds.inter, lineGBs);
  const bwIntra = speedAtMost(speeds.intra, nvlinkGBs / (layout.heads + 1));
  const raised = [...speeds.inter].reverse().find((s) => s >= 2 * bwIntra) ?? speeds.inter[0];
  return {
    ...graphs,
    nvls: { heads: layout.heads, bwIntra, bwInter: Math.max(bwIntra, Math.min(nicSpeed, raised)) },
  };
}

/** AWS's platforms, told apart by their EFA ports a GPU: P5 and P5e 32 x 100 Gb/s a node, P5en 16 x 200 Gb/s. */
const AWS_PORTS_PER_GPU: Readonly<Record<number, AwsPlatform>> = { 4: 'p5', 2: 'p5en' };

/** A link kind of the catalog by its id, undefined for kinds it does not list (staging, forwarding). */
function linkKind(kind: string): LinkKind | undefined {
  return (LINK_KINDS as Readonly<Record<string, LinkKind | undefined>>)[kind];
}

/** The AWS platform of servers of 8 Hopper GPUs on EFA with the plugin's tuner, if they are one. */
function awsPlatform(graph: TopologyGraph, { generation, servers }: NcclServers): AwsPlatform | undefined {
  if (generation !== 'hopper' || servers.some((s) => s.ranks.length !== 8)) return undefined;
  for (const index of graph.route(servers[0].nicHeads[0], servers[1].nicHeads[0])) {
    const link = graph.link(index);
    if (link.family !== 'network') continue;
    // The first network link is the GPU's NIC to its switch, a bundle of the NIC's ports.
    return linkKind(link.kind)?.pluginTuner === true ? AWS_PORTS_PER_GPU[link.count] : undefined;
  }
  return undefined;
}

const awsPlatforms = new GraphRanksMemo<{ platform: AwsPlatform; nodes: number } | undefined>();

/**
 * The AWS platform the ranks fill and its node count, where it is one AWS's tuner knows; derived
 * once per graph and rank list, as every row of a sweep asks.
 */
export function awsPlatformOf(
  graph: TopologyGraph,
  rankDevices: readonly number[],
): { platform: AwsPlatform; nodes: number } | undefined {
  return awsPlatforms.get(graph, rankDevices, () => {
    const found = ncclServers(graph, rankDevices);
    const platform = found === undefined ? undefined : awsPlatform(graph, found);
    return platform === undefined ? undefined : { platform, nodes: found!.servers.length };
  });
}
