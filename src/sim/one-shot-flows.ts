import { oneShotPlan, publishesByReference } from '../algorithms/one-shot-plan.js';
import { type CallShape, REDUCING_COLLECTIVES } from '../algorithms/schedule.js';
import type { TopologyGraph } from '../topology/topology-graph.js';
import { corePools } from './core-pool.js';
import { EventQueue } from './event-queue.js';
import { FlowNetwork } from './flow-network.js';
import {
  BYTES_PER_US_PER_GBPS,
  copyRate,
  freshReadRateOf,
  freshReadWeight,
  rankHosts,
  transferRoute,
} from './flow-costs.js';
import { protocolOf } from './protocols.js';
import { type SimCall, type SimOutcome, singleCallOutcome } from './sim-call.js';
import { callRates, peerReadWriteCosts } from './working-set.js';

/**
 * The executor's one-shot path on CPU ranks, run from the plans the executor runs
 * (algorithms/one-shot-plan.ts): every rank copies its message into its own slot (thread ranks)
 * or a frame to each peer (TCP), then reads the pieces its plan names from its peers' messages,
 * all at once (the reads share the machine's memory paths as flows), waiting once, for the last
 * peer to publish. A reduction folds the peers' messages while it reads them.
 */
export function simulateOneShot(graph: TopologyGraph, rankDevices: readonly number[], call: SimCall): SimOutcome {
  const n = rankDevices.length;
  const protocol = protocolOf(graph.topology, call.protocol);
  const shape: CallShape = {
    collective: call.collective,
    nranks: n,
    count: call.count,
    root: call.root,
    inPlace: call.inPlace === true,
    chunkCount: 0,
  };
  const plans = rankDevices.map((_, rank) => oneShotPlan(shape, rank));
  const rates = callRates(graph, rankDevices, shape, call.elementBytes);
  // The path's own measured costs where the protocol has them (the local profile's).
  const efficiency = protocol.oneShotEfficiency ?? protocol.efficiency;
  const messageBytes = plans[0].messageCount * call.elementBytes;
  // Where a message costs CPU at each end (TCP: a frame to each peer, one from each), a rank
  // spends n - 1 of those before its messages are all out, and n - 1 taking its peers' in.
  const messagesUs = (n - 1) * (protocol.overheadUs ?? 0);
  const pull = protocol.pull === true;
  // Thread ranks publish a message that large by reference (their buffers registered, as the
  // schedules' zero-copy reads assume): nothing is copied into a slot, and readers read the
  // publisher's input, which was not written in the call; each publisher then waits to see its
  // last reader release the call.
  // In place the message lies in the output, which a reduction overwrites while peers would read it.
  const byReference = publishesByReference(plans[0], messageBytes, { readable: pull, overOutput: shape.inPlace });
  // Where ranks read each other's slots (thread ranks), a slot's lines sit in the caches of the
  // peers that read it in the call before, and publishing into it takes them back first; and a
  // slot read was written in this call, so its lines come from the writer's cache (the
  // protocol's invalidationTiers and freshReadGBps, as the schedules pay them).
  const takeBackUsPerByte = byReference
    ? undefined
    : peerReadWriteCosts(graph, rankDevices, protocol, shape, call.elementBytes);
  // The fitted one-shot rate (tuner/fit-one-shot.ts) is of thread ranks reading their peers'
  // inputs by reference; a slot they copy into and read back is priced by what the tune measured
  // of those two moves instead (the copy rate; peerWrittenGBps for bytes a peer just wrote).
  const slotEfficiency = pull && !byReference ? 1 : efficiency;
  const published =
    messagesUs +
    (takeBackUsPerByte === undefined
      ? 0
      : Math.max(
          ...rankDevices.map(
            (d) =>
              messageBytes / slotEfficiency / copyRate(graph.devices[d], rates.deviceScale[d]) +
              messageBytes * (takeBackUsPerByte.get(d) ?? 0),
          ),
        ));
  const freshReadRate = byReference ? undefined : freshReadRateOf(protocol);
  const queue = new EventQueue();
  const pools = corePools(rankDevices, rankHosts(graph, rankDevices), protocol.rankCores);
  const drained = new Float64Array(n);
  const network = new FlowNetwork(queue, rates.capacities, (reader: number) => {
    drained[reader] = queue.now;
  });
  const reducing = REDUCING_COLLECTIVES.has(call.collective);
  // Each rank reads its peers' pieces as flows; its own piece it has already.
  const readBytes = rankDevices.map((device, reader) => {
    // Folding a pulled message reads the destination too, as on the schedule path (startPull).
    const traffic =
      (reducing && pull ? rates.foldTraffic[device] : 1) *
      freshReadWeight(graph.devices[device], rates.deviceScale[device], freshReadRate);
    const plan = plans[reader];
    let bytes = 0;
    for (const { peer } of plan.reads) {
      if (peer === reader || plan.count === 0) continue;
      bytes += plan.count * call.elementBytes;
      network.start(
        transferRoute(graph, rankDevices[peer], device, pull),
        (plan.count * call.elementBytes * traffic) / slotEfficiency,
        reader,
      );
    }
    return bytes;
  });
  queue.run();
  // Every rank waits once, for the last peer to publish, and is woken for it; then it folds.
  // They do so in the order their reads drained, each on a core of its host.
  const order = rankDevices.map((_, reader) => reader).sort((a, b) => drained[a] - drained[b]);
  let last = 0;
  for (const reader of order) {
    const device = rankDevices[reader];
    const rate = (graph.devices[device].reduceGBps ?? 0) * rates.reduceScale[device];
    const work =
      (protocol.wakeUs ?? 0) +
      messagesUs +
      (reducing && rate > 0 ? Math.max(0, readBytes[reader] / (rate * BYTES_PER_US_PER_GBPS) - drained[reader]) : 0);
    last = Math.max(last, pools.get(device)?.finish(drained[reader], work) ?? drained[reader] + work);
  }
  const releasedUs = byReference ? (protocol.releaseUs ?? protocol.wakeUs ?? 0) : 0;
  const timeUs = (protocol.oneShotUs ?? protocol.baseUs) + published + last + releasedUs;
  return singleCallOutcome(timeUs, network);
}
