import { BENCH_OPS } from '../algorithms/bench-ops.js';
import { TscclError, invalidArgument } from '../errors.js';
import type { TopologyGraph } from '../topology/topology-graph.js';
import { failTopology } from './failed-topology.js';
import type { FaultSpec } from './fault-spec.js';
import type { SimRow } from './simulate.js';

/** What the faults of a spec cost one call, and what the call takes with them. */
export interface FaultCost {
  readonly cleanUs: number;
  readonly timeUs: number;
  /** The frame size priced, and the chance that one crossing between hosts arrives corrupted. */
  readonly frameBytes: number;
  readonly frameErrorRate: number;
  /** Frames expected to be sent again on the call's busiest network link, and the time they add. */
  readonly framesResent: number;
  readonly resendUs: number;
  /**
   * What failing over adds: with the failure before the call, the paths left's slower pace; with
   * it during the call, the time to notice it, the unacknowledged window sent again over the paths
   * left, and the rest of the call at their pace.
   */
  readonly failoverUs: number;
  /** Whether a failed link carried this call's traffic (always assumed where no flows were simulated). */
  readonly failedPathUsed: boolean;
  /** The chance that some frame fails its CRC more often than `retries` allows: the call fails with TSCCL_ERR_CHECKSUM. */
  readonly failProbability: number;
}

/** The faults of a run: the spec, and the topology its failures leave. */
export interface FaultPlan {
  readonly spec: FaultSpec;
  /** The topology left after the spec's failures (the clean one where nothing is down). */
  readonly failed: TopologyGraph;
  /** Directed link names that failed, as the clean row's link loads name them. */
  readonly failedLinks: ReadonlySet<string>;
  /** Accelerator id -> the NIC it sends through after its own failed. */
  readonly rebound: ReadonlyMap<string, string>;
}

export interface FaultContext extends FaultPlan {
  readonly devices: readonly number[];
}

/** The plan of a spec on a topology: its failures applied (failed-topology.ts). */
export function planFaults(spec: FaultSpec, graph: TopologyGraph): FaultPlan {
  if (spec.down.length === 0) return { spec, failed: graph, failedLinks: new Set(), rebound: new Map() };
  const { graph: failed, failedLinks, rebound } = failTopology(graph.topology, spec.down);
  return { spec, failed, failedLinks, rebound };
}

/** A call with faults: simulated on the clean topology and on the one left, and priced. */
export function simulateWithFaults<R extends SimRow>(
  plan: FaultPlan,
  clean: TopologyGraph,
  devices: readonly number[],
  simulateOn: (graph: TopologyGraph) => R,
): R & { readonly faults: FaultCost } {
  const cleanRow = simulateOn(clean);
  let degraded = cleanRow;
  if (plan.failed !== clean) {
    try {
      degraded = simulateOn(plan.failed);
    } catch (err) {
      // A route the failures cut is ranks lost, not a bad topology.
      if (!(err instanceof TscclError) || err.details.argument !== 'topology') throw err;
      throw invalidArgument(
        `--faults: after ${plan.spec.down.join(', ')} fail, ${err.message.replace(/^Topology [^:]*: /, '')}: those ranks are lost (TSCCL_ERR_PEER_LOST), not failed over`,
        { argument: '--faults' },
      );
    }
  }
  return faultyRow(degraded, priceFaults(plan.spec, cleanRow, degraded, { ...plan, devices }));
}

/**
 * A call's time with faults, from its clean row and its row on the topology left after failures.
 *
 * Resend: a frame crossing h network links of bit error rate b arrives corrupted with
 * p = 1 - (1 - b)^(8 x frame x h), and is asked for again until intact: p / (1 - p) resends per
 * frame. Each resent frame on the busiest network link costs its transfer again and a round trip
 * (the request back, the frame out), as if the pipeline waited for it; the transport goes on with
 * other frames meanwhile, so this is an upper bound. A frame corrupted more than `retries` times
 * in a row fails the call.
 *
 * Failover: the call's remainder runs on the paths left; a failure during the call first costs
 * the time to notice it and the unacknowledged window sent again.
 */
export function priceFaults(spec: FaultSpec, clean: SimRow, degraded: SimRow, context: FaultContext): FaultCost {
  const { failed, devices } = context;
  const n = devices.length;
  const crossing = firstCrossing(failed, devices);
  const frameBytes = Math.max(1, Math.min(spec.frameBytes, Math.ceil(degraded.bytes / Math.max(1, n))));
  let frameErrorRate = 0;
  let framesResent = 0;
  let resendUs = 0;
  let failProbability = 0;
  if (spec.ber > 0 && crossing !== undefined) {
    frameErrorRate = -Math.expm1(8 * frameBytes * crossing.networkHops * Math.log1p(-spec.ber));
    const network = degraded.links.filter((l) => failed.link(l.index).family === 'network');
    // Without simulated flows (the analytical model), each rank's whole traffic is taken to cross hosts.
    const busiest =
      network.length > 0
        ? Math.max(...network.map((l) => l.bytes))
        : degraded.bytes * BENCH_OPS[degraded.op].busFactor(n);
    const frames =
      network.length > 0
        ? network.reduce((a, l) => a + l.bytes, 0) / frameBytes / crossing.networkHops
        : (n * busiest) / frameBytes;
    framesResent =
      frameErrorRate >= 1
        ? Number.POSITIVE_INFINITY
        : (Math.ceil(busiest / frameBytes) * frameErrorRate) / (1 - frameErrorRate);
    resendUs = framesResent * (2 * crossing.latencyUs + frameBytes / crossing.bytesPerUs);
    const lostFrame = frameErrorRate ** (spec.retries + 1);
    failProbability = lostFrame >= 1 ? 1 : -Math.expm1(frames * Math.log1p(-lostFrame));
  }
  const failedPathUsed =
    spec.down.length > 0 &&
    (clean.links.length === 0 || clean.links.some((l) => l.bytes > 0 && context.failedLinks.has(l.link)));
  let failoverUs = 0;
  if (spec.down.length > 0) {
    const slower = degraded.timeUs - clean.timeUs;
    if (spec.at === 0) failoverUs = slower;
    else if (failedPathUsed) {
      const window = Math.min(spec.windowBytes, clean.bytes);
      const windowUs = crossing === undefined ? 0 : window / crossing.bytesPerUs;
      failoverUs = spec.detectMs * 1000 + windowUs + (1 - spec.at) * slower;
    }
  }
  return {
    cleanUs: clean.timeUs,
    timeUs: clean.timeUs + failoverUs + resendUs,
    frameBytes,
    frameErrorRate,
    framesResent,
    resendUs,
    failoverUs,
    failedPathUsed,
    failProbability,
  };
}

/** A row as it runs with faults: its time and bandwidths, and what they cost. */
export function faultyRow<R extends SimRow>(row: R, cost: FaultCost): R & { readonly faults: FaultCost } {
  const scale = cost.timeUs > 0 ? row.timeUs / cost.timeUs : 1;
  return {
    ...row,
    timeUs: cost.timeUs,
    algbwGBs: row.algbwGBs * scale,
    busbwGBs: row.busbwGBs * scale,
    faults: cost,
  };
}

/** The route between the first rank and the first on another host: its latency, pace and network hops. */
function firstCrossing(
  graph: TopologyGraph,
  devices: readonly number[],
): { latencyUs: number; bytesPerUs: number; networkHops: number } | undefined {
  if (devices.length === 0) return undefined;
  const from = devices[0];
  const host = graph.devices[from].host ?? 0;
  const to = devices.find((d) => (graph.devices[d].host ?? 0) !== host);
  if (to === undefined) return undefined;
  const route = graph.route(from, to);
  let networkHops = 0;
  for (const link of route) if (graph.link(link).family === 'network') networkHops++;
  if (networkHops === 0) return undefined;
  return {
    latencyUs: graph.routeLatency(route),
    bytesPerUs: graph.routeCapacity(route),
    networkHops,
  };
}
