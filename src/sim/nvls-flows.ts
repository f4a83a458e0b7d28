import { SWITCH_KINDS, type SwitchKind } from '../topology/catalog.js';
import type { TopologyGraph } from '../topology/topology-graph.js';
import { EventQueue } from './event-queue.js';
import { FlowNetwork } from './flow-network.js';
import { nvlsFillUs, nvlsSaturatedUs } from './nvls-pipeline.js';
import { protocolOf } from './protocols.js';
import { type SimCall, type SimOutcome, singleCallOutcome } from './sim-call.js';

/** The algorithms whose reductions the switches do: NCCL runs them with the Simple protocol only. */
export const SWITCH_ALGORITHMS: ReadonlySet<string> = new Set(['nvls', 'nvls_tree']);

/** The switch that can reduce in the fabric, if every rank hangs off the same one. */
export function reducingSwitch(graph: TopologyGraph, rankDevices: readonly number[]): number | undefined {
  let found: number | undefined;
  for (const device of rankDevices) {
    const candidates = graph
      .linksFrom(device)
      .filter(
        (l) => graph.devices[l.to].kind === 'switch' && SWITCH_KINDS[graph.devices[l.to].switchKind!].inSwitchReduction,
      )
      .map((l) => l.to);
    if (candidates.length === 0 || (found !== undefined && !candidates.includes(found))) return undefined;
    found ??= candidates[0];
  }
  return found;
}

/**
 * In-switch reduction (NVLink SHARP, "NVLS"): each GPU owns 1/n of the result; the switch reads
 * and sums that part from every GPU and returns it, then the owner stores it once to a
 * multicast address and the switch writes it to every GPU. Per GPU and direction that is
 * (1 + 1/n) of the data, against 2(n-1)/n for a ring, at the switch's reduction efficiency.
 * Both directions stream concurrently (the library pipelines the two phases), so the call
 * takes one drain of that volume, the pipeline's fill (nvls-pipeline.ts) and two traversals.
 * There is no per-step synchronisation to charge: the chunks stream through the pipeline.
 */
export function simulateNvls(graph: TopologyGraph, rankDevices: readonly number[], call: SimCall): SimOutcome {
  const sw = reducingSwitch(graph, rankDevices);
  if (sw === undefined || call.collective !== 'allReduce') {
    throw new Error('nvls needs an all-reduce on ranks that all attach to one NVLink SHARP switch');
  }
  const protocol = protocolOf(graph.topology, call.protocol);
  const run = new SwitchReductions(graph, call);
  run.reduceOn(sw, rankDevices);
  const timeUs = protocol.baseUs + run.finish(rankDevices.length);
  return singleCallOutcome(timeUs, run.network);
}

/**
 * The two servers of an NVLS tree and each one's reducing switch, when the ranks lie on exactly
 * two servers, as many on each, every server's ranks on one NVLink SHARP switch and every rank
 * with a NIC; else undefined.
 */
export function nvlsTreeServers(
  graph: TopologyGraph,
  rankDevices: readonly number[],
): { readonly ranks: number[]; readonly sw: number }[] | undefined {
  const hosts = new Map<number, number[]>();
  for (const device of rankDevices) {
    if (graph.devices[device].nic === undefined) return undefined;
    const host = graph.devices[device].host ?? 0;
    const group = hosts.get(host);
    if (group === undefined) hosts.set(host, [device]);
    else group.push(device);
    if (hosts.size > 2) return undefined;
  }
  const groups = [...hosts.values()];
  if (groups.length !== 2 || groups[0].length !== groups[1].length || groups[0].length < 2) return undefined;
  const servers = groups.map((ranks) => ({ ranks, sw: reducingSwitch(graph, ranks) }));
  if (servers.some((s) => s.sw === undefined)) return undefined;
  return servers as { ranks: number[]; sw: number }[];
}

/**
 * NCCL's NVLS tree on two servers (NVLSTree, which NCCL runs by default across two NVLS
 * servers): each server reduces its GPUs' data in its switch as NVLS does, each GPU owning 1/k
 * of it; a GPU exchanges its share with the GPU of the same index on the other server through
 * their NICs (each server is the tree's root for half of every share: it receives the other's
 * partial sum of that half and returns the total, and sends its own partial sum of the other
 * half), and the switch multicasts the totals. Per GPU that is NVLS's (1 + 1/k) of the data each
 * way on its switch port and 1/k of it each way through its NIC, all streamed at once (the library
 * pipelines the stages), so the call takes one drain of both, NVLS's fill, the switch's two
 * traversals and one crossing of the network.
 */
export function simulateNvlsTree(graph: TopologyGraph, rankDevices: readonly number[], call: SimCall): SimOutcome {
  const servers = nvlsTreeServers(graph, rankDevices);
  if (servers === undefined || call.collective !== 'allReduce') {
    throw new Error('nvls_tree needs an all-reduce on two servers whose GPUs each attach to an NVLink SHARP switch');
  }
  const protocol = protocolOf(graph.topology, call.protocol);
  const run = new SwitchReductions(graph, call);
  for (const { sw, ranks } of servers) run.reduceOn(sw, ranks);
  const k = servers[0].ranks.length;
  const share = (call.count * call.elementBytes) / k / protocol.efficiency;
  let crossUs = 0;
  servers[0].ranks.forEach((device, i) => {
    const peer = servers[1].ranks[i];
    for (const path of [graph.route(device, peer), graph.route(peer, device)]) {
      crossUs = Math.max(crossUs, graph.routeLatency(path) + protocol.netStepUs);
      run.network.start(path, share, undefined);
    }
  });
  const timeUs = protocol.baseUs + run.finish(k) + crossUs;
  return singleCallOutcome(timeUs, run.network);
}

/** The flows of in-switch reductions run at once, and what their pipeline then takes. */
class SwitchReductions {
  readonly network: FlowNetwork;
  private readonly queue = new EventQueue();
  private lastDrain = 0;
  private stepLatency = 0;
  private portRate = Infinity;
  private switchKind: SwitchKind | undefined;
  private efficiency = 1;

  private readonly graph: TopologyGraph;
  private readonly call: SimCall;

  constructor(graph: TopologyGraph, call: SimCall) {
    this.graph = graph;
    this.call = call;
    this.network = new FlowNetwork(this.queue, graph.capacities, () => {
      this.lastDrain = Math.max(this.lastDrain, this.queue.now);
    });
  }

  /** Every rank sends its data up to `sw` and takes the totals back: (1 + 1/n) of it each way. */
  reduceOn(sw: number, ranks: readonly number[]): void {
    const { graph, call } = this;
    this.switchKind = SWITCH_KINDS[graph.devices[sw].switchKind!];
    this.efficiency = protocolOf(graph.topology, call.protocol).efficiency * this.switchKind.reductionEfficiency;
    const bytes = (call.count * call.elementBytes * (1 + 1 / ranks.length)) / this.efficiency;
    for (const device of ranks) {
      for (const path of [graph.route(device, sw), graph.route(sw, device)]) {
        this.stepLatency = Math.max(this.stepLatency, graph.routeLatency(path) + graph.deviceLatency(sw));
        for (const link of path) this.portRate = Math.min(this.portRate, graph.capacities[link]);
        this.network.start(path, bytes, undefined);
      }
    }
  }

  /**
   * Runs the flows, and returns the pipeline's fill, the drain and the switch's two traversals
   * (the reduced data crosses the fabric twice: up from the GPUs, back down to them), for
   * switches of `ranks` GPUs each.
   */
  finish(ranks: number): number {
    this.queue.run();
    const bytes = this.call.count * this.call.elementBytes;
    const rate = this.portRate * this.efficiency;
    const fill = nvlsFillUs(bytes, ranks, this.switchKind!, rate);
    const drain = Math.max(this.lastDrain, nvlsSaturatedUs(bytes, ranks, rate));
    return fill + drain + 2 * this.stepLatency;
  }
}
