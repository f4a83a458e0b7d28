import { type CallShape, bufferCounts } from '../algorithms/schedule.js';
import { type CacheTiers, cacheScale } from '../topology/cache-tiers.js';
import type { TopologyGraph } from '../topology/topology-graph.js';

/** The rates one call sees: link capacities (bytes/us) and a factor on each device's own rates. */
export interface CallRates {
  readonly capacities: Float64Array;
  readonly deviceScale: Float64Array;
}

/**
 * Rates for one call. On a host whose CPU declares cache tiers, the call's working set (every
 * buffer its ranks there read or write, as the executor sizes them) decides how fast memory
 * moves: that host's memory links, its forwarding and its ranks' copies and reductions are
 * scaled together. Hosts without tiers, and every GPU topology, keep their stated rates.
 */
export function callRates(graph: TopologyGraph, rankDevices: readonly number[], shape: CallShape, elementBytes: number): CallRates {
  const deviceScale = new Float64Array(graph.devices.length).fill(1);
  const tiered = new Map<number, CacheTiers>();
  for (const device of graph.devices) {
    if (device.cacheTiers !== undefined) tiered.set(device.host ?? 0, device.cacheTiers);
  }
  if (tiered.size === 0) return { capacities: graph.capacities, deviceScale };
  const workingSet = new Map<number, number>();
  rankDevices.forEach((device, rank) => {
    const host = graph.devices[device].host ?? 0;
    const { input, output } = bufferCounts(shape, rank);
    workingSet.set(host, (workingSet.get(host) ?? 0) + (input + output) * elementBytes);
  });
  const hostScale = new Map<number, number>();
  for (const [host, tiers] of tiered) hostScale.set(host, cacheScale(tiers, workingSet.get(host) ?? 0));
  graph.devices.forEach((device, i) => { deviceScale[i] = hostScale.get(device.host ?? -1) ?? 1; });
  const capacities = Float64Array.from(graph.capacities);
  for (let index = 0; index < graph.linkCount; index++) {
    const { from, to, family } = graph.link(index);
    const host = graph.devices[from].host;
    // Memory links within a tiered host, and the forwarding limit of its CPU (a link from the device to itself).
    const moves = family === 'memory' || (family === 'host' && from === to);
    if (moves && host !== undefined && hostScale.has(host) && graph.devices[to].host === host) capacities[index] *= hostScale.get(host)!;
  }
  return { capacities, deviceScale };
}
