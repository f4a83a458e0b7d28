import { SWITCH_KINDS } from '../topology/catalog.js';
import type { TopologyGraph } from '../topology/topology-graph.js';
import { EventQueue } from './event-queue.js';
import { FlowNetwork } from './flow-network.js';
import { nvlsFillUs, nvlsSaturatedUs } from './nvls-pipeline.js';
import { protocolOf } from './protocols.js';
import { type SimCall, type SimOutcome, singleCallOutcome } from './sim-call.js';

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
  const n = rankDevices.length;
  const protocol = protocolOf(graph.topology, call.protocol);
  const switchKind = SWITCH_KINDS[graph.devices[sw].switchKind!];
  const efficiency = protocol.efficiency * switchKind.reductionEfficiency;
  const queue = new EventQueue();
  let lastDrain = 0;
  const network = new FlowNetwork(queue, graph.capacities, () => {
    lastDrain = Math.max(lastDrain, queue.now);
  });
  const bytes = (call.count * call.elementBytes * (1 + 1 / n)) / efficiency;
  let stepLatency = 0;
  let portRate = Infinity;
  for (const device of rankDevices) {
    for (const path of [graph.route(device, sw), graph.route(sw, device)]) {
      stepLatency = Math.max(stepLatency, graph.routeLatency(path) + graph.deviceLatency(sw));
      for (const link of path) portRate = Math.min(portRate, graph.capacities[link]);
      network.start(path, bytes, undefined);
    }
  }
  queue.run();
  const fill = nvlsFillUs(call.count * call.elementBytes, n, switchKind, portRate * efficiency);
  const drain = Math.max(lastDrain, nvlsSaturatedUs(call.count * call.elementBytes, n, portRate * efficiency));
  // The switch's reduced data crosses the fabric twice: up from the GPUs, back down to them.
  const timeUs = protocol.baseUs + fill + drain + 2 * stepLatency;
  return singleCallOutcome(timeUs, network);
}
