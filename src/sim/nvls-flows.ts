import { SWITCH_KINDS, type SwitchKind } from '../topology/catalog.js';
import type { TopologyGraph } from '../topology/topology-graph.js';
import { EventQueue } from './event-queue.js';
import { FlowNetwork } from './flow-network.js';
import { nvlsFillUs, nvlsSaturatedUs } from './nvls-pipeline.js';
import { NvlsTreeLayout } from './nvls-tree-layout.js';
import { protocolOf } from './protocols.js';
import { reducingSwitch } from './reducing-switch.js';
import { type SimCall, type SimOutcome, singleCallOutcome } from './sim-call.js';

/** The algorithms whose reductions the switches do: NCCL runs them with the Simple protocol only. */
export const SWITCH_ALGORITHMS: ReadonlySet<string> = new Set(['nvls', 'nvls_tree']);

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
 * NCCL's NVLS tree (NVLSTree, its default for large all-reduces across NVLS servers): each
 * server reduces its GPUs' data in its switch as NVLS does; each head (nvls-tree-layout.ts) owns
 * 1/heads of the result and passes its partial sum up NCCL's double binary tree over the servers
 * through its NIC, half of the share on each tree; the totals come back down the same edges and
 * the switch multicasts them. Per head and tree edge that is half a share each way; on two
 * servers a head's NIC carries one share each way, from four on an inner server's two. All of it
 * streams at once (the library pipelines the stages), so the call takes one drain of the switch
 * ports and the NICs together, NVLS's fill and traversals, and the tree's fill: its first chunks
 * climbing to the root and back (NvlsTreeLayout.fillUs).
 */
export function simulateNvlsTree(graph: TopologyGraph, rankDevices: readonly number[], call: SimCall): SimOutcome {
  const layout = NvlsTreeLayout.of(graph, rankDevices);
  if (layout === undefined || call.collective !== 'allReduce') {
    throw new Error(
      'nvls_tree needs an all-reduce on two or more servers, as many ranks on each, whose GPUs each attach to an NVLink SHARP switch and have a NIC',
    );
  }
  const protocol = protocolOf(graph.topology, call.protocol);
  const run = new SwitchReductions(graph, call);
  for (const { sw, ranks } of layout.servers) run.reduceOn(sw, ranks);
  const bytes = call.count * call.elementBytes;
  const half = bytes / layout.heads / 2 / protocol.efficiency;
  let hopLatency = 0;
  let nicRate = Infinity;
  for (const tree of layout.edges) {
    for (const { child, parent } of tree) {
      layout.servers[child].heads.forEach((head, h) => {
        const above = layout.servers[parent].heads[h];
        for (const path of [graph.route(head, above), graph.route(above, head)]) {
          hopLatency = Math.max(hopLatency, graph.routeLatency(path) + protocol.netStepUs);
          nicRate = Math.min(nicRate, graph.routeCapacity(path));
          run.network.start(path, half, undefined);
        }
      });
    }
  }
  const timeUs = protocol.baseUs + run.finish(layout.perServer) + layout.fillUs(bytes, hopLatency, nicRate);
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
