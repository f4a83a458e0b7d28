import { GraphRanksMemo } from './graph-ranks-memo.js';
import {
  busiestDoubleTreeDegree,
  inOrderTree,
  secondTreeHost,
  secondTreePosition,
} from '../algorithms/in-order-binary-tree.js';
import { SWITCH_KINDS, type SwitchKind } from '../topology/catalog.js';
import type { TopologyGraph } from '../topology/topology-graph.js';
import { reducingSwitch } from './reducing-switch.js';
import { nicHeads, serversWithNics } from './servers-with-nics.js';

/** NCCL's most NVLS heads per server (NCCL_MAX_NVLS_ARITY, src/include/device.h, 2.21 on). */
export const MAX_NVLS_HEADS = 32;

/** NCCL's NVLS tree chunk (NCCL_NVLS_CHUNKSIZE), and its cap from four servers on (NCCL_NVLSTREE_MAX_CHUNKSIZE). */
const TREE_CHUNK_BYTES = 128 * 1024;
const WIDE_TREE_CHUNK_BYTES = 64 * 1024;

export interface NvlsTreeServer {
  readonly ranks: readonly number[];
  /** The switch that reduces for this server's ranks. */
  readonly sw: number;
  /** The ranks that carry the server's share through their NICs, one per NIC (NCCL's NVLS heads). */
  readonly heads: readonly number[];
}

/** A tree edge between two servers, for one of NCCL's two trees. */
export interface NvlsTreeEdge {
  readonly child: number;
  readonly parent: number;
}

/**
 * Where NCCL's NVLS tree (NVLSTree) can run and how it is laid out: every server's ranks on one
 * NVLink SHARP switch, as many on each and more than two, every rank with a NIC. Each server reduces in its switch;
 * head h of every server (the first rank on each of its NICs, as many on each server as the
 * server with the fewest, at most MAX_NVLS_HEADS: src/graph/connect.cc) owns 1/heads of the
 * data, and the h-th heads of all servers join in NCCL's double binary tree over the servers
 * (src/graph/trees.cc), half of the share on each tree.
 */
const layouts = new GraphRanksMemo<NvlsTreeLayout | undefined>();

export class NvlsTreeLayout {
  readonly servers: readonly NvlsTreeServer[];
  readonly switchKind: SwitchKind;
  /** Per tree, the edges between servers (indices into `servers`). */
  readonly edges: readonly (readonly NvlsTreeEdge[])[];
  /** Hops from the deepest server to the root. */
  readonly depth: number;
  /**
   * The most tree neighbours one server's head serves in both trees at once, parent and
   * children, each for half of the share: the busiest NIC's traffic is this many half-shares
   * each way (2 on two servers, 4 from four on: one share, then two).
   */
  readonly busiestNeighbours: number;
  /**
   * Each server's way to the root of each tree: its hops, and the children of the servers those
   * hops reach summed (both trees' children meet on a head's NIC).
   */
  private readonly climbs: readonly { readonly hops: number; readonly children: number }[];

  private constructor(servers: NvlsTreeServer[], switchKind: SwitchKind) {
    this.servers = servers;
    this.switchKind = switchKind;
    const n = servers.length;
    const serverAt = [(p: number) => p, (p: number) => secondTreeHost(n, p)];
    const positionOf = [(s: number) => s, (s: number) => secondTreePosition(n, s)];
    this.edges = [0, 1].map((t) => {
      const edges: NvlsTreeEdge[] = [];
      for (let s = 0; s < n; s++) {
        const { parent } = inOrderTree(n, positionOf[t](s));
        if (parent !== undefined) edges.push({ child: s, parent: serverAt[t](parent) });
      }
      return edges;
    });
    const children = new Array<number>(n).fill(0);
    const parents = this.edges.map(() => new Array<number | undefined>(n).fill(undefined));
    this.edges.forEach((tree, t) => {
      for (const { child, parent } of tree) {
        children[parent]++;
        parents[t][child] = parent;
      }
    });
    this.busiestNeighbours = busiestDoubleTreeDegree(n);
    const climbs: { hops: number; children: number }[] = [];
    for (const up of parents) {
      for (let s = 0; s < n; s++) {
        let hops = 0;
        let met = 0;
        for (let at = up[s]; at !== undefined; at = up[at]) {
          hops++;
          met += children[at];
        }
        climbs.push({ hops, children: met });
      }
    }
    this.climbs = climbs;
    this.depth = Math.max(...climbs.map((c) => c.hops));
  }

  /**
   * The layout for these ranks, or undefined where NCCL cannot run its NVLS tree; built once per
   * graph and rank list (a row asks for it to offer, choose, price and count channels).
   */
  static of(graph: TopologyGraph, rankDevices: readonly number[]): NvlsTreeLayout | undefined {
    return layouts.get(graph, rankDevices, () => NvlsTreeLayout.build(graph, rankDevices));
  }

  private static build(graph: TopologyGraph, rankDevices: readonly number[]): NvlsTreeLayout | undefined {
    const groups = serversWithNics(graph, rankDevices);
    // NCCL sets NVLS up only for more than two GPUs a server (ncclNvlsInit, src/transport/nvls.cc).
    if (groups === undefined || groups[0].length <= 2) return undefined;
    const found: { ranks: number[]; sw: number; nicHeads: number[] }[] = [];
    for (const ranks of groups) {
      const sw = reducingSwitch(graph, ranks);
      if (sw === undefined) return undefined;
      found.push({ ranks, sw, nicHeads: nicHeads(graph, ranks) });
    }
    const heads = Math.min(MAX_NVLS_HEADS, ...found.map((f) => f.nicHeads.length));
    const servers = found.map(({ ranks, sw, nicHeads }) => ({ ranks, sw, heads: nicHeads.slice(0, heads) }));
    return new NvlsTreeLayout(servers, SWITCH_KINDS[graph.devices[found[0].sw].switchKind!]);
  }

  get heads(): number {
    return this.servers[0].heads.length;
  }

  /** Ranks on each server. */
  get perServer(): number {
    return this.servers[0].ranks.length;
  }

  /** The thread blocks (channels) NCCL runs the tree with: every one serves every head. */
  get channels(): number {
    return this.switchKind.treeChannels;
  }

  /** NCCL's chunk for a call of `bytes` (src/enqueue.cc, NVLS_TREE): smaller from four servers on, and for smaller calls. */
  chunkBytes(bytes: number): number {
    const operations = this.channels * this.heads;
    let chunk = this.servers.length >= 4 ? WIDE_TREE_CHUNK_BYTES : TREE_CHUNK_BYTES;
    if (bytes < 4 * operations * chunk && chunk > 65536) chunk = 65536;
    if (bytes < operations * chunk && chunk > 32768) chunk = 32768;
    return chunk;
  }

  /**
   * Microseconds for a call's first chunks to climb the tree and come back down, on the longest
   * way: each hop its route's latency plus the chunks that meet on the NIC it reaches (every
   * channel's, half of them on each tree, from each child), and the same hops back.
   */
  fillUs(bytes: number, hopLatencyUs: number, nicRate: number): number {
    const chunk = Math.min(this.chunkBytes(bytes), bytes / (this.channels * this.heads));
    const perChild = ((this.channels / 2) * chunk) / nicRate;
    let longest = 0;
    for (const { hops, children } of this.climbs)
      longest = Math.max(longest, hops * hopLatencyUs + children * perChild);
    return 2 * longest;
  }
}
