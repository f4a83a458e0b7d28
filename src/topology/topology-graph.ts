import { invalidArgument } from '../errors.js';
import { LINK_KINDS, type LinkFamily, SWITCH_KINDS } from './catalog.js';
import { type Device, RANK_KINDS, type Topology } from './topology-schema.js';

/**
 * One direction of a link bundle, with the capacity a library sustains on it. Links are full
 * duplex: each file link becomes two of these, so traffic one way never slows the other.
 */
export interface DirectedLink {
  readonly index: number;
  readonly from: number;
  readonly to: number;
  /** Sustained bytes per microsecond (= GB/s x 1000) of the whole bundle. */
  readonly capacity: number;
  readonly latencyUs: number;
  readonly kind: string;
  readonly family: LinkFamily;
  readonly count: number;
  readonly name: string;
}

/** Devices that pass traffic on; accelerators are endpoints only (they do not relay). */
const FORWARDS = new Set(['cpu', 'nic', 'switch']);

/**
 * A topology indexed for the engine: integer device and link ids, adjacency, and routes.
 * Routes are shortest by latency (ties: fewer hops) through forwarding devices; traffic between
 * hosts leaves by the source accelerator's NIC and enters by the destination's, as NCCL binds
 * each GPU to its nearest NIC.
 */
export class TopologyGraph {
  readonly devices: readonly Device[];
  readonly links: DirectedLink[] = [];
  /** Sustained bytes per microsecond of every link, by link index (what the flow engine shares). */
  readonly capacities: Float64Array;
  /** Accelerators in rank order (device order of the file). */
  readonly accelerators: readonly number[];
  private readonly byId = new Map<string, number>();
  private readonly outLinks: number[][];
  /** The internal link of each device with a forwarding limit, or -1. */
  private readonly forwarding: number[];
  private readonly routes = new Map<number, Int32Array>();

  readonly topology: Topology;

  constructor(topology: Topology) {
    this.topology = topology;
    this.devices = topology.devices;
    topology.devices.forEach((d, i) => this.byId.set(d.id, i));
    this.outLinks = topology.devices.map(() => []);
    for (const link of topology.links) {
      const catalog = LINK_KINDS[link.kind];
      const gbps = (link.gbps ?? catalog.gbps) * (link.efficiency ?? catalog.efficiency) * link.count;
      for (const [a, b] of [[link.a, link.b], [link.b, link.a]]) {
        const from = this.byId.get(a)!;
        const to = this.byId.get(b)!;
        const index = this.links.length;
        this.links.push({
          index, from, to, capacity: gbps * 1000, latencyUs: link.latencyUs ?? catalog.latencyUs, kind: link.kind,
          family: catalog.family, count: link.count, name: `${a}->${b}`,
        });
        this.outLinks[from].push(index);
      }
    }
    this.accelerators = topology.devices.flatMap((d, i) => (RANK_KINDS.has(d.kind) ? [i] : []));
    // A device with a forwarding limit gets one internal link that every route through it crosses.
    this.forwarding = topology.devices.map((d, i) => {
      if (d.forwardGBps === undefined) return -1;
      const index = this.links.length;
      this.links.push({ index, from: i, to: i, capacity: d.forwardGBps * 1000, latencyUs: 0, kind: 'forwarding', family: 'host', count: 1, name: `${d.id} (forwarding)` });
      return index;
    });
    this.capacities = Float64Array.from(this.links, (l) => l.capacity);
  }

  deviceIndex(id: string): number {
    const index = this.byId.get(id);
    if (index === undefined) throw invalidArgument(`No device '${id}' in topology ${this.topology.name}`, { argument: 'device' });
    return index;
  }

  /** Directed links leaving a device. */
  linksFrom(device: number): DirectedLink[] {
    return this.outLinks[device].map((i) => this.links[i]);
  }

  /** Latency added by passing through a device (switch chips only). */
  deviceLatency(device: number): number {
    const d = this.devices[device];
    return d.kind === 'switch' && d.switchKind !== undefined ? SWITCH_KINDS[d.switchKind].latencyUs : 0;
  }

  /** Directed link ids from src to dst. Throws when no path exists. */
  route(src: number, dst: number): Int32Array {
    const key = src * this.devices.length + dst;
    let path = this.routes.get(key);
    if (path === undefined) {
      const hops = Array.from(this.computeRoute(src, dst));
      const withForwarding: number[] = [];
      hops.forEach((link, i) => {
        withForwarding.push(link);
        const through = this.forwarding[this.links[link].to];
        if (i + 1 < hops.length && through >= 0) withForwarding.push(through);
      });
      path = Int32Array.from(withForwarding);
      this.routes.set(key, path);
    }
    return path;
  }

  /** Sum of link and switch latencies along a route. */
  routeLatency(path: Int32Array): number {
    let total = 0;
    for (let i = 0; i < path.length; i++) {
      const link = this.links[path[i]];
      total += link.latencyUs + (i + 1 < path.length ? this.deviceLatency(link.to) : 0);
    }
    return total;
  }

  private computeRoute(src: number, dst: number): Int32Array {
    if (src === dst) return new Int32Array(0);
    const a = this.devices[src];
    const b = this.devices[dst];
    if (a.host !== b.host && a.nic !== undefined && b.nic !== undefined) {
      const srcNic = this.deviceIndex(a.nic);
      const dstNic = this.deviceIndex(b.nic);
      return Int32Array.from([
        ...this.shortest(src, srcNic, 'any'),
        ...(srcNic === dstNic ? [] : this.shortest(srcNic, dstNic, 'network')),
        ...this.shortest(dstNic, dst, 'any'),
      ]);
    }
    return Int32Array.from(this.shortest(src, dst, 'any'));
  }

  private shortest(src: number, dst: number, scope: 'any' | 'network'): number[] {
    if (src === dst) return [];
    const via = this.dijkstra(src, dst, scope);
    if (via === undefined) {
      throw invalidArgument(`Topology ${this.topology.name}: no route from ${this.devices[src].id} to ${this.devices[dst].id}`, { argument: 'topology' });
    }
    const path: number[] = [];
    for (let at = dst; at !== src;) {
      const link = this.links[via.get(at)!];
      path.push(link.index);
      at = link.from;
    }
    return path.reverse();
  }

  /**
   * Latency-weighted shortest path from src, stopping when dst is settled (a cluster of 100,000
   * GPUs has ~300,000 devices; a route only explores the part nearer than its target). A tiny
   * per-hop term prefers fewer hops on ties. Returns the link each reached device came by.
   */
  private dijkstra(src: number, dst: number, scope: 'any' | 'network'): Map<number, number> | undefined {
    const dist = new Map<number, number>([[src, 0]]);
    const via = new Map<number, number>();
    const done = new Set<number>();
    // Topologies have at most tens of thousands of devices; a binary heap keeps this O(E log V).
    const heap: [number, number][] = [[0, src]];
    const push = (item: [number, number]) => {
      heap.push(item);
      for (let i = heap.length - 1; i > 0;) {
        const p = (i - 1) >> 1;
        if (heap[p][0] <= heap[i][0]) break;
        [heap[p], heap[i]] = [heap[i], heap[p]];
        i = p;
      }
    };
    const pop = (): [number, number] => {
      const top = heap[0];
      const last = heap.pop()!;
      if (heap.length > 0) {
        heap[0] = last;
        for (let i = 0; ;) {
          const l = 2 * i + 1;
          const r = l + 1;
          let m = i;
          if (l < heap.length && heap[l][0] < heap[m][0]) m = l;
          if (r < heap.length && heap[r][0] < heap[m][0]) m = r;
          if (m === i) break;
          [heap[m], heap[i]] = [heap[i], heap[m]];
          i = m;
        }
      }
      return top;
    };
    while (heap.length > 0) {
      const [d, u] = pop();
      if (done.has(u)) continue;
      done.add(u);
      if (u === dst) return via;
      if (u !== src && !FORWARDS.has(this.devices[u].kind)) continue;
      const pass = u === src ? 0 : this.deviceLatency(u);
      for (const li of this.outLinks[u]) {
        const link = this.links[li];
        if (scope === 'network' && link.family !== 'network') continue;
        const nd = d + pass + link.latencyUs + 1e-6;
        if (nd < (dist.get(link.to) ?? Infinity)) {
          dist.set(link.to, nd);
          via.set(link.to, li);
          push([nd, link.to]);
        }
      }
    }
    return undefined;
  }
}
