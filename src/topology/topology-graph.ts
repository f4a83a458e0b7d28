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
}

/** Devices that pass traffic on; accelerators are endpoints only (they do not relay). */
const FORWARDS = new Set(['cpu', 'nic', 'switch']);

/** fileLink of a CPU's staging link (a forwarding limit's is -1). */
const STAGING = -2;

/** Which links a route may take: any, or only those of one family. */
type RouteScope = 'any' | LinkFamily;

/**
 * A topology indexed for the engine: integer device and link ids, adjacency, and routes.
 * Routes are shortest by latency (ties: fewer hops) through forwarding devices; traffic between
 * hosts leaves by the source accelerator's NIC and enters by the destination's, as NCCL binds
 * each GPU to its nearest NIC. Two accelerators of one host that the scale-up fabric joins
 * (NVLink, xGMI, HCCS, directly or through its switches) talk over it, even where a host path is
 * shorter: NCCL ranks a GPU pair's paths by kind before length, NVLink first (src/graph/paths.cc),
 * so the two B200s of a GB200 superchip talk through the NVLink switches, not through their
 * Grace's C2C links. Where accelerators cannot reach each other's memory (the topology's
 * `peerToPeer: false`), a message between two of one host goes up to the CPU nearest its
 * receiver, through that CPU's staging link (its memory, written and read back), and down.
 */
export class TopologyGraph {
  readonly devices: readonly Device[];
  /** Number of directed links; link ids run from 0 to this. */
  readonly linkCount: number;
  /** Sustained bytes per microsecond of every link, by link index (what the flow engine shares). */
  readonly capacities: Float64Array;
  /** Accelerators in rank order (device order of the file). */
  readonly accelerators: readonly number[];
  // Links live in typed arrays, not objects: a 100,000-GPU cluster has ~1 million of them, and
  // building them as objects cost as much as the analytical model's whole budget.
  private readonly linkFrom: Int32Array;
  private readonly linkTo: Int32Array;
  private readonly latencies: Float64Array;
  /** The file link each directed link comes from, or -1 for a forwarding limit. */
  private readonly fileLink: Int32Array;
  private readonly families: LinkFamily[];
  /** Per link family, the devices a route of that family only passes to come back (deadEndsIn). */
  private readonly deadEnds = new Map<LinkFamily, Uint8Array>();
  private readonly byId = new Map<string, number>();
  /** Out-links of device d are outLinks[outStart[d] .. outStart[d + 1]). */
  private readonly outStart: Int32Array;
  private readonly outLinks: Int32Array;
  /** The internal link of each device with a forwarding limit, or -1. */
  private readonly forwarding: Int32Array;
  /** Where peer-to-peer is off: each CPU's staging link (its memory, written and read), or -1. */
  private readonly staging: Int32Array;
  private readonly routes = new Map<number, Int32Array>();
  private readonly nearestCpus = new Map<number, number>();
  private readonly gdrStagedByRule = new Map<number, boolean>();
  private search: RouteSearch | undefined;

  readonly topology: Topology;

  constructor(topology: Topology) {
    this.topology = topology;
    const devices = topology.devices;
    const fileLinks = topology.links;
    this.devices = devices;
    devices.forEach((d, i) => {
      this.byId.set(d.id, i);
    });
    const accelerators: number[] = [];
    let limited = 0;
    // CPUs stage messages where accelerators cannot reach each other, and where a NIC may not reach them (GDR).
    const stages = topology.peerToPeer === false || topology.gpuDirectRdma !== 'on';
    const stagingRate = (d: Device): number | undefined =>
      stages && d.kind === 'cpu'
        ? (d.stagingGBps ?? (d.memoryGBps === undefined ? undefined : d.memoryGBps / 2))
        : undefined;
    devices.forEach((d, i) => {
      if (RANK_KINDS.has(d.kind)) accelerators.push(i);
      if (d.forwardGBps !== undefined) limited++;
      if (stagingRate(d) !== undefined) limited++;
    });
    this.accelerators = accelerators;
    const count = 2 * fileLinks.length + limited;
    this.linkCount = count;
    this.linkFrom = new Int32Array(count);
    this.linkTo = new Int32Array(count);
    this.capacities = new Float64Array(count);
    this.latencies = new Float64Array(count);
    this.fileLink = new Int32Array(count);
    this.families = new Array<LinkFamily>(count);
    const outDegree = new Int32Array(devices.length + 1);
    fileLinks.forEach((link, i) => {
      const catalog = LINK_KINDS[link.kind];
      const capacity = (link.gbps ?? catalog.gbps) * (link.efficiency ?? catalog.efficiency) * link.count * 1000;
      const latencyUs = link.latencyUs ?? catalog.latencyUs;
      const a = this.byId.get(link.a)!;
      const b = this.byId.get(link.b)!;
      // Links are full duplex: each file link is two directed links, one per direction.
      this.setLink(2 * i, a, b, capacity, latencyUs, i, catalog.family);
      this.setLink(2 * i + 1, b, a, capacity, latencyUs, i, catalog.family);
      outDegree[a]++;
      outDegree[b]++;
    });
    // A device with a forwarding limit gets one internal link that every route through it crosses.
    this.forwarding = new Int32Array(devices.length).fill(-1);
    let next = 2 * fileLinks.length;
    devices.forEach((d, i) => {
      if (d.forwardGBps === undefined) return;
      this.setLink(next, i, i, d.forwardGBps * 1000, 0, -1, 'host');
      this.forwarding[i] = next++;
    });
    this.staging = new Int32Array(devices.length).fill(-1);
    devices.forEach((d, i) => {
      const rate = stagingRate(d);
      if (rate === undefined) return;
      this.setLink(next, i, i, rate * 1000, LINK_KINDS['host-memory'].latencyUs, STAGING, 'memory');
      this.staging[i] = next++;
    });
    this.outStart = new Int32Array(devices.length + 1);
    for (let d = 0; d < devices.length; d++) this.outStart[d + 1] = this.outStart[d] + outDegree[d];
    this.outLinks = new Int32Array(2 * fileLinks.length);
    const fill = this.outStart.slice(0, devices.length);
    for (let l = 0; l < 2 * fileLinks.length; l++) this.outLinks[fill[this.linkFrom[l]]++] = l;
  }

  /** A directed link as an object, for reports and set-up code (the engine reads the arrays). */
  link(index: number): DirectedLink {
    const source = this.fileLink[index];
    const fileLink = source >= 0 ? this.topology.links[source] : undefined;
    return {
      index,
      from: this.linkFrom[index],
      to: this.linkTo[index],
      capacity: this.capacities[index],
      latencyUs: this.latencies[index],
      kind: fileLink?.kind ?? (source === STAGING ? 'staging' : 'forwarding'),
      family: this.families[index],
      count: fileLink?.count ?? 1,
    };
  }

  /** The device a directed link leaves (link() without building its record). */
  linkSource(index: number): number {
    return this.linkFrom[index];
  }

  /** The device a directed link enters. */
  linkTarget(index: number): number {
    return this.linkTo[index];
  }

  /** Links are named only when reported. */
  linkName(index: number): string {
    const from = this.devices[this.linkFrom[index]].id;
    if (this.fileLink[index] === STAGING) return `${from} (staging)`;
    return this.fileLink[index] < 0 ? `${from} (forwarding)` : `${from}->${this.devices[this.linkTo[index]].id}`;
  }

  deviceIndex(id: string): number {
    const index = this.byId.get(id);
    if (index === undefined)
      throw invalidArgument(`No device '${id}' in topology ${this.topology.name}`, { argument: 'device' });
    return index;
  }

  private setLink(
    index: number,
    from: number,
    to: number,
    capacity: number,
    latencyUs: number,
    fileLink: number,
    family: LinkFamily,
  ): void {
    this.linkFrom[index] = from;
    this.linkTo[index] = to;
    this.capacities[index] = capacity;
    this.latencies[index] = latencyUs;
    this.fileLink[index] = fileLink;
    this.families[index] = family;
  }

  /** Directed links leaving a device. */
  linksFrom(device: number): DirectedLink[] {
    const out: DirectedLink[] = [];
    for (let k = this.outStart[device]; k < this.outStart[device + 1]; k++) out.push(this.link(this.outLinks[k]));
    return out;
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
        const through = this.forwarding[this.linkTo[link]];
        // A staging link stays in its CPU, which the link before it already passed through.
        if (i + 1 < hops.length && through >= 0 && this.fileLink[link] !== STAGING) withForwarding.push(through);
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
      const link = path[i];
      total += this.latencies[link] + (i + 1 < path.length ? this.deviceLatency(this.linkTo[link]) : 0);
    }
    return total;
  }

  /** The sustained bytes per microsecond of a route: its slowest link's (Infinity for an empty route). */
  routeCapacity(path: Int32Array): number {
    let slowest = Infinity;
    for (const link of path) slowest = Math.min(slowest, this.capacities[link]);
    return slowest;
  }

  private computeRoute(src: number, dst: number): Int32Array {
    if (src === dst) return new Int32Array(0);
    const a = this.devices[src];
    const b = this.devices[dst];
    if (a.host !== b.host && a.nic !== undefined && b.nic !== undefined) {
      const srcNic = this.deviceIndex(a.nic);
      const dstNic = this.deviceIndex(b.nic);
      return Int32Array.from([
        ...this.nicWay(src, srcNic, 'out'),
        ...(srcNic === dstNic ? [] : this.shortest(srcNic, dstNic, 'network')),
        ...this.nicWay(dst, dstNic, 'in'),
      ]);
    }
    const peers = RANK_KINDS.has(a.kind) && RANK_KINDS.has(b.kind);
    if (peers && this.topology.peerToPeer === false) {
      const cpu = this.nearestCpu(dst);
      const stage = this.staging[cpu];
      return Int32Array.from([
        ...this.shortest(src, cpu, 'any'),
        ...(stage >= 0 ? [stage] : []),
        ...this.shortest(cpu, dst, 'any'),
      ]);
    }
    const scaleUp = peers && this.dijkstra(src, dst, 'scale-up');
    return Int32Array.from(scaleUp ? this.pathTo(src, dst) : this.shortest(src, dst, 'any'));
  }

  /**
   * The way between an accelerator and its NIC, out to the NIC or in from it: direct where the
   * NIC reaches the accelerator's memory (GPUDirect RDMA), else through the host memory of the
   * CPU nearest the accelerator, written by one side and read by the other (its staging link).
   */
  private nicWay(device: number, nic: number, direction: 'out' | 'in'): number[] {
    if (!this.gdrStaged(device))
      return direction === 'out' ? this.shortest(device, nic, 'any') : this.shortest(nic, device, 'any');
    const cpu = this.nearestCpu(device);
    const stage = this.staging[cpu] >= 0 ? [this.staging[cpu]] : [];
    if (!this.dijkstra(cpu, nic, 'any'))
      throw invalidArgument(
        `Topology ${this.topology.name}: GPUDirect RDMA is off, but ${this.devices[nic].id} cannot be reached from a CPU (it is built into ${this.devices[device].id}), so nothing can be staged in host memory`,
        { argument: '--gdr' },
      );
    return direction === 'out'
      ? [...this.shortest(device, cpu, 'any'), ...stage, ...this.shortest(cpu, nic, 'any')]
      : [...this.shortest(nic, cpu, 'any'), ...stage, ...this.shortest(cpu, device, 'any')];
  }

  /**
   * Whether traffic between this accelerator and other hosts is staged in host memory: as the
   * topology says, or by NCCL's default rule (NCCL_NET_GDR_LEVEL=PXB, and NCCL_NET_GDR_C2C):
   * staged where the way to its NIC enters a CPU other than over a C2C link (a PCIe root).
   */
  private gdrStaged(device: number): boolean {
    const mode = this.topology.gpuDirectRdma ?? 'auto';
    if (mode === 'on' || this.devices[device].kind === 'core') return false;
    if (mode === 'off') return true;
    let staged = this.gdrStagedByRule.get(device);
    if (staged === undefined) {
      const nic = this.deviceIndex(this.devices[device].nic!);
      staged = this.shortest(device, nic, 'any').some(
        (link) => this.devices[this.linkTo[link]].kind === 'cpu' && this.link(link).kind !== 'nvlink-c2c',
      );
      this.gdrStagedByRule.set(device, staged);
    }
    return staged;
  }

  /** The CPU of a device's host its route reaches first (NUMA-nearest). */
  private nearestCpu(device: number): number {
    const known = this.nearestCpus.get(device);
    if (known !== undefined) return known;
    const host = this.devices[device].host;
    let best = -1;
    let bestUs = Infinity;
    this.devices.forEach((d, i) => {
      if (d.kind !== 'cpu' || d.host !== host) return;
      const us = this.routeLatency(Int32Array.from(this.shortest(device, i, 'any')));
      if (us < bestUs) {
        best = i;
        bestUs = us;
      }
    });
    if (best < 0)
      throw invalidArgument(
        `Topology ${this.topology.name}: messages are staged in host memory (peerToPeer false, or GPUDirect RDMA off) but host ${host} has no cpu to stage them in`,
        { argument: 'topology' },
      );
    this.nearestCpus.set(device, best);
    return best;
  }

  private shortest(src: number, dst: number, scope: RouteScope): number[] {
    if (src === dst) return [];
    if (!this.dijkstra(src, dst, scope)) {
      throw invalidArgument(
        `Topology ${this.topology.name}: no route from ${this.devices[src].id} to ${this.devices[dst].id}`,
        { argument: 'topology' },
      );
    }
    return this.pathTo(src, dst);
  }

  /** The links from src to dst, read back from what the last search recorded. */
  private pathTo(src: number, dst: number): number[] {
    const via = this.search!.via;
    const path: number[] = [];
    for (let at = dst; at !== src; ) {
      const link = via[at];
      path.push(link);
      at = this.linkFrom[link];
    }
    return path.reverse();
  }

  /**
   * Per device, 1 where all its links of `family` (both ways) join it to one same neighbour: a
   * route of that family passes through it only to come back, so a search need not go there
   * unless it is the target. Found once per family.
   */
  private deadEndsIn(family: LinkFamily): Uint8Array {
    let marks = this.deadEnds.get(family);
    if (marks !== undefined) return marks;
    const n = this.devices.length;
    const neighbour = new Int32Array(n).fill(-1);
    marks = new Uint8Array(n).fill(1);
    const meet = (device: number, other: number) => {
      if (neighbour[device] === -1) neighbour[device] = other;
      else if (neighbour[device] !== other) marks![device] = 0;
    };
    for (let li = 0; li < this.families.length; li++) {
      if (this.families[li] !== family) continue;
      meet(this.linkFrom[li], this.linkTo[li]);
      meet(this.linkTo[li], this.linkFrom[li]);
    }
    this.deadEnds.set(family, marks);
    return marks;
  }

  /**
   * Latency-weighted shortest path from src, stopping when dst is settled (a cluster of 100,000
   * GPUs has ~300,000 devices; a route only explores the part nearer than its target). A tiny
   * per-hop term prefers fewer hops on ties. Records the link each reached device came by in
   * `search.via` (read by pathTo before the next search); returns whether dst was reached.
   */
  private dijkstra(src: number, dst: number, scope: RouteScope): boolean {
    // Scratch arrays kept across searches, stamped per search, as a large cluster's simulation
    // routes hundreds of thousands of pairs.
    const search = (this.search ??= new RouteSearch(this.devices.length));
    const epoch = ++search.epoch;
    const { dist, reached, settled, via } = search;
    const heap = search.heap;
    const deadEnds = scope === 'any' ? undefined : this.deadEndsIn(scope);
    heap.clear();
    dist[src] = 0;
    reached[src] = epoch;
    heap.push(0, src);
    while (heap.size > 0) {
      const d = heap.topKey();
      const u = heap.pop();
      if (settled[u] === epoch) continue;
      settled[u] = epoch;
      if (u === dst) return true;
      if (u !== src && !FORWARDS.has(this.devices[u].kind)) continue;
      const pass = u === src ? 0 : this.deviceLatency(u);
      for (let k = this.outStart[u]; k < this.outStart[u + 1]; k++) {
        const li = this.outLinks[k];
        if (scope !== 'any' && this.families[li] !== scope) continue;
        const to = this.linkTo[li];
        // A device whose only neighbour in the scope is the one it is reached from leads nowhere new.
        if (to !== dst && deadEnds !== undefined && deadEnds[to] === 1) continue;
        const nd = d + pass + this.latencies[li] + 1e-6;
        if (reached[to] !== epoch || nd < dist[to]) {
          reached[to] = epoch;
          dist[to] = nd;
          via[to] = li;
          heap.push(nd, to);
        }
      }
    }
    return false;
  }
}

/** A route search's scratch: distances, stamps and the link each device was reached by, and a binary heap of (distance, device). */
class RouteSearch {
  epoch = 0;
  readonly dist: Float64Array;
  readonly reached: Int32Array;
  readonly settled: Int32Array;
  readonly via: Int32Array;
  readonly heap = new DistanceHeap();

  constructor(devices: number) {
    this.dist = new Float64Array(devices);
    this.reached = new Int32Array(devices);
    this.settled = new Int32Array(devices);
    this.via = new Int32Array(devices);
  }
}

/** A binary min-heap of devices keyed by distance, in two parallel arrays. */
class DistanceHeap {
  private keys: number[] = [];
  private items: number[] = [];

  get size(): number {
    return this.keys.length;
  }

  clear(): void {
    this.keys.length = 0;
    this.items.length = 0;
  }

  topKey(): number {
    return this.keys[0];
  }

  push(key: number, item: number): void {
    const { keys, items } = this;
    let i = keys.length;
    keys.push(key);
    items.push(item);
    while (i > 0) {
      const p = (i - 1) >> 1;
      if (keys[p] <= key) break;
      keys[i] = keys[p];
      items[i] = items[p];
      i = p;
    }
    keys[i] = key;
    items[i] = item;
  }

  /** Removes the least and returns its item. */
  pop(): number {
    const { keys, items } = this;
    const top = items[0];
    const lastKey = keys.pop()!;
    const lastItem = items.pop()!;
    const n = keys.length;
    if (n === 0) return top;
    let i = 0;
    for (;;) {
      const l = 2 * i + 1;
      if (l >= n) break;
      const r = l + 1;
      const m = r < n && keys[r] < keys[l] ? r : l;
      if (lastKey <= keys[m]) break;
      keys[i] = keys[m];
      items[i] = items[m];
      i = m;
    }
    keys[i] = lastKey;
    items[i] = lastItem;
    return top;
  }
}
