import { type CallShape, bufferCounts } from '../algorithms/schedule.js';
import { type CacheTiers, cacheScale } from '../topology/cache-tiers.js';
import type { TopologyGraph } from '../topology/topology-graph.js';
import type { Protocol } from './protocols.js';

/**
 * Memory traffic of folding a message into a buffer against copying it where nothing measured
 * says otherwise: (2 reads + 1 write) / (1 read + 1 write).
 */
export const REDUCE_TRAFFIC = 1.5;

/** The rates one call sees: link capacities (bytes/us) and factors on each device's own rates. */
export interface CallRates {
  readonly capacities: Float64Array;
  /** On a device's copies (and its memory). */
  readonly deviceScale: Float64Array;
  /** On a device's reductions. */
  readonly reduceScale: Float64Array;
  /**
   * How many bytes of its copy path a device's fold of a pulled message loads per byte folded:
   * its copy speed over its reduction speed at the call's working set, where its host's tiers
   * measure both; REDUCE_TRAFFIC elsewhere. On the 2-core VMs the kernel folded as fast as a
   * core copies while the three buffers fit the caches (31 GB/s up to 12 MiB), and 1.5-1.6x
   * slower past them (bench/RESULTS.md, measured 2026-11-23).
   */
  readonly foldTraffic: Float64Array;
}

/**
 * Rates for one call. On a host whose CPU declares cache tiers, the call's working set (every
 * buffer its ranks there read or write, as the executor sizes them) decides how fast memory
 * moves: that host's memory links and its ranks' copies and reductions by one core's speed there,
 * its forwarding by what all its cores move at once. A TCP stack or socket end with loopback
 * tiers forwards, and the links that end at it carry, at its speed for that working set. Hosts
 * without tiers, and every GPU topology, keep their stated rates.
 */
export function callRates(
  graph: TopologyGraph,
  rankDevices: readonly number[],
  shape: CallShape,
  elementBytes: number,
): CallRates {
  const deviceScale = new Float64Array(graph.devices.length).fill(1);
  const reduceScale = new Float64Array(graph.devices.length).fill(1);
  const foldTraffic = new Float64Array(graph.devices.length).fill(REDUCE_TRAFFIC);
  const tiered = new Map<number, CacheTiers>();
  const loopback: number[] = [];
  graph.devices.forEach((device, i) => {
    if (device.cacheTiers !== undefined) tiered.set(device.host ?? 0, device.cacheTiers);
    if (device.loopbackTiers !== undefined) loopback.push(i);
  });
  if (tiered.size === 0 && loopback.length === 0)
    return { capacities: graph.capacities, deviceScale, reduceScale, foldTraffic };
  const workingSet = hostWorkingSets(graph, rankDevices, shape, elementBytes);
  const capacities = Float64Array.from(graph.capacities);
  const hostScale = new Map<number, number>();
  const hostReduceScale = new Map<number, number>();
  const sharedScale = new Map<number, number>();
  const foldMeasured = new Set<number>();
  for (const [host, tiers] of tiered) {
    hostScale.set(host, cacheScale(tiers, workingSet.get(host) ?? 0));
    hostReduceScale.set(host, cacheScale(tiers, workingSet.get(host) ?? 0, 'reduceScale'));
    sharedScale.set(host, cacheScale(tiers, workingSet.get(host) ?? 0, 'sharedScale'));
    if (tiers.every((tier) => tier.reduceScale !== undefined)) foldMeasured.add(host);
  }
  graph.devices.forEach((device, i) => {
    const host = device.host ?? -1;
    deviceScale[i] = hostScale.get(host) ?? 1;
    reduceScale[i] = hostReduceScale.get(host) ?? 1;
    if (foldMeasured.has(host) && device.memoryGBps !== undefined && device.reduceGBps !== undefined) {
      foldTraffic[i] = (device.memoryGBps * deviceScale[i]) / (device.reduceGBps * reduceScale[i]);
    }
  });
  // 0 where a device has no loopback tiers (a tier's scale is positive).
  const loopbackScale = new Float64Array(graph.devices.length);
  for (const i of loopback)
    loopbackScale[i] = cacheScale(graph.devices[i].loopbackTiers!, workingSet.get(graph.devices[i].host ?? 0) ?? 0);
  for (let index = 0; index < graph.linkCount; index++) {
    const { from, to, family } = graph.link(index);
    // A link between two loopback devices (a socket end and its stack) has one speed: both have the host's tiers.
    capacities[index] *= loopbackScale[from] || loopbackScale[to] || 1;
    const host = graph.devices[from].host;
    if (host === undefined || !hostScale.has(host) || graph.devices[to].host !== host) continue;
    // Memory links within a tiered host run at one core's speed; the forwarding limit of its CPU
    // (a link from the device to itself) at what all its cores move at once.
    if (family === 'memory') capacities[index] *= hostScale.get(host)!;
    else if (family === 'host' && from === to) capacities[index] *= sharedScale.get(host)!;
  }
  return { capacities, deviceScale, reduceScale, foldTraffic };
}

/** Bytes of every buffer the call's ranks on each host read or write, as the executor sizes them, by host. */
export function hostWorkingSets(
  graph: TopologyGraph,
  rankDevices: readonly number[],
  shape: CallShape,
  elementBytes: number,
): Map<number, number> {
  const workingSet = new Map<number, number>();
  rankDevices.forEach((device, rank) => {
    const host = graph.devices[device].host ?? 0;
    const { input, output } = bufferCounts(shape, rank);
    workingSet.set(host, (workingSet.get(host) ?? 0) + (input + output) * elementBytes);
  });
  return workingSet;
}

/**
 * Microseconds per byte each rank device spends, on top of a write, taking back lines a peer's
 * core read (the protocol's invalidationTiers), at the bytes each core of its host touches in the
 * call: the host's working set over the cores its ranks run on. Empty where ranks do not pull
 * (only then do peers read a rank's memory) or there are no tiers.
 */
export function peerReadWriteCosts(
  graph: TopologyGraph,
  rankDevices: readonly number[],
  protocol: Protocol,
  shape: CallShape,
  elementBytes: number,
): Map<number, number> {
  const costs = new Map<number, number>();
  if (protocol.pull !== true || protocol.invalidationTiers === undefined) return costs;
  const tiers = protocol.invalidationTiers.map((t) => ({ bytes: t.bytes, scale: t.nsPerByte }));
  const workingSet = hostWorkingSets(graph, rankDevices, shape, elementBytes);
  const ranksOn = new Map<number, number>();
  for (const device of rankDevices)
    ranksOn.set(graph.devices[device].host ?? 0, (ranksOn.get(graph.devices[device].host ?? 0) ?? 0) + 1);
  for (const device of rankDevices) {
    const host = graph.devices[device].host ?? 0;
    const cores = Math.min(ranksOn.get(host)!, protocol.rankCores ?? Infinity);
    costs.set(device, cacheScale(tiers, workingSet.get(host)! / cores) / 1000);
  }
  return costs;
}

/**
 * The working set past which neither callRates nor peerReadWriteCosts change: the largest bytes
 * of any tier (cache, loopback, invalidation), as every tier holds its scale past the last and
 * each rank's buffers hold at least the call's count. 0 where nothing depends on the working set.
 */
export function workingSetSaturationBytes(graph: TopologyGraph, protocol: Protocol | undefined): number {
  let bytes = 0;
  for (const device of graph.devices)
    for (const tier of [...(device.cacheTiers ?? []), ...(device.loopbackTiers ?? [])])
      bytes = Math.max(bytes, tier.bytes);
  for (const tier of protocol?.invalidationTiers ?? []) bytes = Math.max(bytes, tier.bytes);
  return bytes;
}
