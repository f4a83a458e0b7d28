import { closestName } from '../config/closest-name.js';
import { invalidArgument } from '../errors.js';
import { LINK_KINDS } from '../topology/catalog.js';
import { TopologyGraph } from '../topology/topology-graph.js';
import { RANK_KINDS, type Topology } from '../topology/topology-schema.js';

/** A topology after failures, and which of its accelerators moved to another NIC. */
export interface FailedTopology {
  readonly topology: Topology;
  /** Accelerator id -> the NIC it uses now, for each whose own NIC lost its way to the network. */
  readonly rebound: ReadonlyMap<string, string>;
  /** Directed links (`a->b`, as TopologyGraph names them) that lost a cable or all of them. */
  readonly failedLinks: ReadonlySet<string>;
  /** The topology left, indexed (built once: a large cluster's graph takes seconds). */
  readonly graph: TopologyGraph;
}

/**
 * The topology that is left when devices (a NIC, a switch) or single cables (`a/b`; one of a
 * bundle's `count`) fail: what failing over moves the traffic onto. An accelerator whose NIC can no
 * longer reach the network sends through the nearest NIC of its host that can (NCCL's PXN path
 * through a neighbour's NIC is the same move). A failure that leaves a host without a way out, or
 * the fabric in pieces, is no longer a recoverable fault: its ranks are lost, and the error says so.
 */
export function failTopology(topology: Topology, down: readonly string[], argument = '--faults'): FailedTopology {
  const ids = new Set(topology.devices.map((d) => d.id));
  const unknown = (id: string) => {
    const near = closestName(id, [...ids]);
    return invalidArgument(
      `${argument} down=${id}: no device '${id}' in topology ${topology.name}${near === undefined ? '' : ` (did you mean '${near}'?)`}`,
      { argument },
    );
  };
  const deadDevices = new Set<string>();
  const links = topology.links.map((l) => ({ ...l }));
  for (const item of down) {
    const ends = item.split('/').map((s) => s.trim());
    for (const id of ends) if (!ids.has(id)) throw unknown(id);
    if (ends.length === 1) {
      const device = topology.devices.find((d) => d.id === ends[0])!;
      if (RANK_KINDS.has(device.kind))
        throw invalidArgument(
          `${argument} down=${item}: ${device.id} is a rank's own ${device.kind}; its failure loses the rank (shrink the job), which no path can route around: fail a NIC, switch or link`,
          { argument },
        );
      deadDevices.add(ends[0]);
      continue;
    }
    if (ends.length !== 2)
      throw invalidArgument(`${argument} down=${item}: a link is two device ids joined by one /`, { argument });
    const [a, b] = ends;
    const link = links.find((l) => l.count > 0 && ((l.a === a && l.b === b) || (l.a === b && l.b === a)));
    if (link === undefined)
      throw invalidArgument(
        `${argument} down=${item}: no working link joins ${a} and ${b} in topology ${topology.name}`,
        {
          argument,
        },
      );
    link.count -= 1;
  }
  const failedLinks = new Set<string>();
  links.forEach((l, i) => {
    if (l.count < topology.links[i].count || deadDevices.has(l.a) || deadDevices.has(l.b))
      for (const name of [`${l.a}->${l.b}`, `${l.b}->${l.a}`]) failedLinks.add(name);
  });
  const left = links.filter((l) => l.count > 0 && !deadDevices.has(l.a) && !deadDevices.has(l.b));
  // A NIC is alive while a network link still leaves it.
  const reachesNetwork = new Set<string>();
  for (const l of left)
    if (LINK_KINDS[l.kind].family === 'network') {
      reachesNetwork.add(l.a);
      reachesNetwork.add(l.b);
    }
  const cut: Topology = { ...topology, links: left };
  const graph = new TopologyGraph(cut);
  const rebound = new Map<string, string>();
  const devices = topology.devices.map((d) => {
    if (d.nic === undefined || reachesNetwork.has(d.nic)) return d;
    const self = graph.deviceIndex(d.id);
    let best: string | undefined;
    let bestUs = Number.POSITIVE_INFINITY;
    for (const nic of topology.devices) {
      if (nic.kind !== 'nic' || nic.host !== d.host || !reachesNetwork.has(nic.id)) continue;
      let us: number;
      try {
        us = graph.routeLatency(graph.route(self, graph.deviceIndex(nic.id)));
      } catch {
        continue;
      }
      if (us < bestUs) [best, bestUs] = [nic.id, us];
    }
    if (best === undefined)
      throw invalidArgument(
        `${argument}: after ${down.join(', ')} fail, ${d.id} (host ${d.host ?? 0}) has no NIC that reaches the network: its rank is lost (TSCCL_ERR_PEER_LOST), not failed over`,
        { argument },
      );
    rebound.set(d.id, best);
    return { ...d, nic: best };
  });
  const failed: Topology = { ...cut, devices };
  const failedGraph = new TopologyGraph(failed);
  checkHostsJoined(failedGraph, down, argument);
  return { topology: failed, rebound, failedLinks, graph: failedGraph };
}

/** Every host's first accelerator still reaches the first host's, both ways. */
function checkHostsJoined(graph: TopologyGraph, down: readonly string[], argument: string): void {
  const firstOfHost = new Map<number, number>();
  for (const a of graph.accelerators) {
    const host = graph.devices[a].host ?? 0;
    if (!firstOfHost.has(host)) firstOfHost.set(host, a);
  }
  const [origin, ...others] = [...firstOfHost.values()];
  for (const other of others) {
    for (const [from, to] of [
      [origin, other],
      [other, origin],
    ]) {
      try {
        graph.route(from, to);
      } catch {
        throw invalidArgument(
          `${argument}: after ${down.join(', ')} fail, no path joins ${graph.devices[from].id} and ${graph.devices[to].id}: the fabric is split and ranks are lost (TSCCL_ERR_PEER_LOST), not failed over`,
          { argument },
        );
      }
    }
  }
}
