import type { TopologyGraph } from '../topology/topology-graph.js';
import type { Device } from '../topology/topology-schema.js';
import type { Protocol } from './protocols.js';
import type { CallRates } from './working-set.js';

/** Bytes per microsecond in one GB/s: topologies give rates in GB/s, the flow engine moves bytes per microsecond. */
export const BYTES_PER_US_PER_GBPS = 1000;

/** The copy speed of a device whose topology gives neither memory nor reduction speed (GB/s): fast enough to cost nothing next to its links. */
export const UNMEASURED_COPY_GBPS = 1000;

/** Dense host index of every rank, as CallShape.hosts wants it. */
export function rankHosts(graph: TopologyGraph, rankDevices: readonly number[]): number[] {
  const dense = new Map<number, number>();
  return rankDevices.map((d) => {
    const host = graph.devices[d].host ?? 0;
    if (!dense.has(host)) dense.set(host, dense.size);
    return dense.get(host)!;
  });
}

/**
 * What a rank that outnumbers the cores copies at over a path, while it has a core: each link's
 * capacity, shared by the cores of the ranks that copy over it where there are fewer cores than
 * such ranks. Such a copy holds its rank's core (the reader's thread does it), so the ranks'
 * copies and hand-offs take turns on the cores; as flows, 8 ranks' copies on 2 cores ran beside
 * the hand-offs as though on 4, and the model priced an 8-rank 32 KiB all-reduce by recursive
 * doubling (24 folds of 32 KiB) below the tree (7), which ran 1.1-1.5x faster in four regret grids.
 */
export function coreShareRates(
  capacities: Float64Array,
  copyPaths: readonly Int32Array[],
  cores: number | undefined,
): (path: Int32Array) => number {
  const copiers = new Int32Array(capacities.length);
  for (const path of copyPaths) for (const link of path) copiers[link]++;
  return (path) => {
    let rate = Infinity;
    for (const link of path)
      rate = Math.min(rate, capacities[link] / Math.max(1, Math.min(cores ?? Infinity, copiers[link])));
    return rate;
  };
}

/** Rank devices on a host with more ranks than cores for them. */
export function crowdedRanks(
  rankDevices: readonly number[],
  hosts: readonly number[],
  cores: number | undefined,
): Set<number> {
  if (cores === undefined) return new Set();
  const perHost = new Map<number, number>();
  for (const host of hosts) perHost.set(host, (perHost.get(host) ?? 0) + 1);
  return new Set(rankDevices.filter((_, r) => perHost.get(hosts[r])! > cores));
}

/**
 * The links a message from `from` to `to` loads: its route, or, when the reader copies it out of
 * the writer's memory (`pull`), the route without the writer's own links, as the writer's core
 * takes no part in it.
 */
export function transferRoute(graph: TopologyGraph, from: number, to: number, pull: boolean): Int32Array {
  const route = graph.route(from, to);
  return pull ? route.filter((link) => graph.link(link).from !== from) : route;
}

/** Bytes per microsecond at which a rank that pulls copies data its sender wrote in the same call (protocol.freshReadGBps); undefined where that costs nothing extra. */
export function freshReadRateOf(protocol: Protocol): number | undefined {
  return protocol.pull === true && protocol.freshReadGBps !== undefined
    ? protocol.freshReadGBps * BYTES_PER_US_PER_GBPS
    : undefined;
}

/** What a byte of fresh data weighs on a reader's copy path: its copy speed over the fresh-read rate, at least 1 (1 without a fresh-read rate). */
export function freshReadWeight(device: Device, scale: number, freshReadRate: number | undefined): number {
  return freshReadRate === undefined ? 1 : Math.max(1, copyRate(device, scale) / freshReadRate);
}

/** Bytes per microsecond a device copies, counting the bytes written (a core's own measure; a GPU's memory bandwidth). */
export function copyRate(device: Device, scale: number): number {
  return (device.memoryGBps ?? device.reduceGBps ?? UNMEASURED_COPY_GBPS) * BYTES_PER_US_PER_GBPS * scale;
}

/**
 * Microseconds a rank's local step of `bytes` written from `reads` sources takes by itself. A
 * GPU's memory bandwidth counts every byte read and written. A CPU core's speeds are measured
 * as bytes written: it copies at its memoryGBps, and its reduction kernel folds two sources
 * into the destination per pass at its reduceGBps.
 */
export function localUs(device: Device, bytes: number, reads: number, rates: CallRates, index: number): number {
  const scale = rates.deviceScale[index];
  if (device.kind !== 'core')
    return ((reads + 1) * bytes) / ((device.memoryGBps ?? UNMEASURED_COPY_GBPS) * BYTES_PER_US_PER_GBPS * scale);
  if (reads > 1 && device.reduceGBps !== undefined)
    return ((reads - 1) * bytes) / (device.reduceGBps * BYTES_PER_US_PER_GBPS * rates.reduceScale[index]);
  return bytes / copyRate(device, scale);
}
