import type { EventQueue } from './event-queue.js';

/**
 * Below this many flows in flight a change refills its whole component at once: the neighbourhood
 * refill and its check cost more than they save where the component is small anyway.
 */
const LOCAL_REFILL_FLOWS = 256;
/** Local refills that may fail in a row before the next ones are skipped, and the most skipped at once. */
const LOCAL_REFILL_FAILURES = 4;
const LOCAL_REFILL_MAX_SKIPS = 1024;
/**
 * Times a local refill that fails its check widens by one hop before the whole component is
 * refilled, and the share of the flows in flight it may reach (1 / this).
 */
const LOCAL_REFILL_WIDENINGS = 3;
const LOCAL_REFILL_SHARE = 4;

interface Flow {
  readonly tag: unknown;
  finished: boolean;
  readonly path: Int32Array;
  remaining: number;
  rate: number;
  since: number;
  /** When the drain event that counts fires. */
  due: number;
  /** Position in each path link's flow list, for O(1) removal. */
  readonly slots: number[];
  mark: number;
}

/**
 * Flow-level network: concurrent transfers share every link they cross with max-min fairness
 * (progressive filling: the most contended link fixes the rate of its flows, their usage is
 * taken off the other links, repeat). Rates are recomputed only for the flows connected to a
 * change through shared links, once per instant however many flows start or end in it.
 *
 * A flow that starts on the path a flow left in the same instant takes that flow's place and
 * rate, as max-min shares depend only on the set of paths: no rate moves, nothing is recomputed.
 * With many flows in flight, a change first refills only the flows on its own links
 * (settleLocally), and the whole component only when that is not the max-min allocation.
 */
export class FlowNetwork {
  /** Bytes that crossed each link (for utilisation and the bottleneck report). */
  readonly carried: Float64Array;
  private readonly linkFlows: Flow[][];
  private readonly dirty: number[] = [];
  private recomputeQueued = false;
  /** Flows moving now. */
  private inFlight = 0;
  /** Recomputations left to do by component before a local refill is tried again, and local refills that failed in a row. */
  private localSkips = 0;
  private localFailures = 0;
  private markEpoch = 0;
  private readonly linkMark: Int32Array;
  private readonly remCap: Float64Array;
  private readonly unfrozen: Int32Array;
  /** Each link's load and fastest flow while a local refill is checked, valid where summedAt is the check's epoch. */
  private readonly linkLoad: Float64Array;
  private readonly linkFastest: Float64Array;
  private readonly summedAt: Int32Array;
  /** The rates of the flows that left each path this instant, for flows that take their places; unfilled places mark their links dirty. */
  private readonly vacated = new Map<Int32Array, number[]>();
  /** Scratch lists of a recompute, kept to spare the allocations. */
  private readonly componentLinks: number[] = [];
  private readonly componentFlows: Flow[] = [];
  private readonly widerSeed: number[] = [];
  private readonly stack: number[] = [];
  private active: number[] = [];
  private nextActive: number[] = [];

  private readonly queue: EventQueue;
  /** Each link's capacity in this run, bytes per microsecond. */
  readonly capacity: Float64Array;
  private readonly onDrained: (tag: never) => void;
  /** Told every link's new load each time rates settle (a traced call's timeline): bytes per microsecond. */
  onRate: ((timeUs: number, link: number, bytesPerUs: number) => void) | undefined;

  /** Links no flow's rate can depend on (implied-links.ts): counted as carried, left out of every refill. */
  private readonly neverBinds: Uint8Array | undefined;
  /** Each path without its never-binding links, the same array for the same path. */
  private readonly bindingPaths = new Map<Int32Array, Int32Array>();

  /**
   * `onDrained(tag)` runs for every transfer when its last byte has left. `neverBinds` marks links
   * whose constraint others imply: refills leave them out, which gives the same rates.
   */
  constructor(queue: EventQueue, capacity: Float64Array, onDrained: (tag: never) => void, neverBinds?: Uint8Array) {
    this.queue = queue;
    this.capacity = capacity;
    this.onDrained = onDrained;
    this.neverBinds = neverBinds;
    const n = capacity.length;
    this.carried = new Float64Array(n);
    this.linkFlows = Array.from({ length: n }, () => []);
    this.linkMark = new Int32Array(n);
    this.remCap = new Float64Array(n);
    this.unfrozen = new Int32Array(n);
    this.linkLoad = new Float64Array(n);
    this.linkFastest = new Float64Array(n);
    this.summedAt = new Int32Array(n);
  }

  /**
   * Starts moving `bytes` along `route` now; `onDrained(tag)` runs when the last byte has left.
   * `path` is the route's binding links, bindingPath(route), which a caller that starts many
   * flows on one route may keep.
   */
  start<T>(route: Int32Array, bytes: number, tag: T, path = this.bindingPath(route)): void {
    for (let i = 0; i < route.length; i++) this.carried[route[i]] += bytes;
    if (bytes <= 0 || route.length === 0) {
      this.queue.at(this.queue.now, this.onDrained as (tag: T) => void, tag);
      return;
    }
    const flow: Flow = {
      tag,
      finished: false,
      path,
      remaining: bytes,
      rate: 0,
      since: this.queue.now,
      due: -1,
      slots: new Array<number>(path.length),
      mark: 0,
    };
    this.inFlight++;
    const place = this.takePlace(path);
    for (let i = 0; i < path.length; i++) {
      const list = this.linkFlows[path[i]];
      flow.slots[i] = list.length;
      list.push(flow);
      if (place === undefined) this.dirty.push(path[i]);
    }
    if (place === undefined) {
      this.queueRecompute();
      return;
    }
    flow.rate = place;
    flow.due = this.queue.now + bytes / Math.max(place, 1e-9);
    this.queue.at(flow.due, this.drainEvent, flow);
  }

  /** The links of a route that can bind its flows (all of them, or the route itself, when none is left out). */
  bindingPath(route: Int32Array): Int32Array {
    const neverBinds = this.neverBinds;
    if (neverBinds === undefined) return route;
    let path = this.bindingPaths.get(route);
    if (path === undefined) {
      const kept = route.filter((link) => neverBinds[link] === 0);
      path = kept.length === route.length || kept.length === 0 ? route : kept;
      this.bindingPaths.set(route, path);
    }
    return path;
  }

  /** The rate of a flow that left `path` this instant, whose place a new flow takes; undefined if none. */
  private takePlace(path: Int32Array): number | undefined {
    if (this.vacated.size === 0) return undefined;
    const left = this.vacated.get(path);
    if (left === undefined) return undefined;
    const rate = left.pop()!;
    if (left.length === 0) this.vacated.delete(path);
    return rate;
  }

  /**
   * Moves `bytes` along `path` at a pace set elsewhere (a CPU core's, where ranks take turns on
   * the cores and a copy lasts as long as the core spends on it): counted as carried, drained at
   * `drainedAt`, sharing no capacity with the flows.
   */
  carryUntil<T>(path: Int32Array, bytes: number, drainedAt: number, tag: T): void {
    for (let i = 0; i < path.length; i++) this.carried[path[i]] += bytes;
    this.queue.at(drainedAt, this.onDrained as (tag: T) => void, tag);
  }

  /** Drain events stay queued when a flow's rate changes; only the one at its current due time counts. */
  private readonly drainEvent = (flow: Flow): void => {
    if (!flow.finished && flow.due === this.queue.now) this.finish(flow);
  };

  private finish(flow: Flow): void {
    flow.finished = true;
    this.inFlight--;
    for (let i = 0; i < flow.path.length; i++) {
      const link = flow.path[i];
      const list = this.linkFlows[link];
      const slot = flow.slots[i];
      const last = list.pop()!;
      if (last !== flow) {
        list[slot] = last;
        last.slots[last.path.indexOf(link)] = slot;
      }
    }
    const left = this.vacated.get(flow.path);
    if (left === undefined) this.vacated.set(flow.path, [flow.rate]);
    else left.push(flow.rate);
    this.queueRecompute();
    this.onDrained(flow.tag as never);
  }

  private queueRecompute(): void {
    if (this.recomputeQueued) return;
    this.recomputeQueued = true;
    this.queue.at(this.queue.now, this.recomputeEvent);
  }

  private readonly recomputeEvent = (): void => this.recompute();

  private recompute(): void {
    this.recomputeQueued = false;
    // Places left this instant that no flow took: their links' shares change.
    for (const path of this.vacated.keys()) for (let i = 0; i < path.length; i++) this.dirty.push(path[i]);
    this.vacated.clear();
    if (this.dirty.length === 0) return;
    if (this.inFlight < LOCAL_REFILL_FLOWS || this.localSkips > 0) {
      this.localSkips--;
      this.settleComponent();
    } else if (this.settleLocally()) this.localFailures = 0;
    else {
      // Where local refills keep failing (patterns whose changes spread), stop paying for them
      // for a while, longer after each further failure in a row.
      if (++this.localFailures >= LOCAL_REFILL_FAILURES)
        this.localSkips = Math.min(LOCAL_REFILL_MAX_SKIPS, 2 ** (this.localFailures - LOCAL_REFILL_FAILURES));
      this.settleComponent();
    }
    this.dirty.length = 0;
  }

  /**
   * Refills the flows on the changed links alone, holding every other flow at its rate, and
   * keeps the result if it is the max-min allocation: every flow it moved, and every flow that
   * shares a link with them, still has a bottleneck (a full link where none runs faster). The
   * allocation with that property is unique, so this is the answer a refill of the component
   * gives, at the cost of the changed links' neighbourhood instead of every flow in flight.
   * Where the check fails, the change reached further: the refill widens by one hop (every flow
   * on the links it moved) and tries again, a few times while the neighbourhood stays a small
   * part of the flows in flight, before the caller refills the whole component.
   */
  private settleLocally(): boolean {
    const now = this.queue.now;
    const flows = this.componentFlows;
    const links = this.componentLinks;
    let seed: readonly number[] = this.dirty;
    for (let widening = 0; widening <= LOCAL_REFILL_WIDENINGS; widening++) {
      const epoch = ++this.markEpoch;
      flows.length = 0;
      links.length = 0;
      for (const link of seed)
        for (const flow of this.linkFlows[link]) {
          if (flow.mark === epoch) continue;
          flow.mark = epoch;
          flows.push(flow);
        }
      if (widening > 0 && flows.length * LOCAL_REFILL_SHARE > this.inFlight) return false;
      for (const flow of flows)
        for (let i = 0; i < flow.path.length; i++) {
          const link = flow.path[i];
          if (this.linkMark[link] === epoch) continue;
          this.linkMark[link] = epoch;
          links.push(link);
        }
      for (const link of links) {
        let held = 0;
        let count = 0;
        for (const flow of this.linkFlows[link]) {
          if (flow.mark === epoch) count++;
          else held += flow.rate;
        }
        this.remCap[link] = this.capacity[link] - held;
        this.unfrozen[link] = count;
      }
      this.advance(flows, now);
      this.fill(links, flows.length);
      if (this.everyFlowBottlenecked(flows, links, epoch)) {
        this.settle(links, flows, now);
        return true;
      }
      const wider = this.widerSeed;
      wider.length = 0;
      for (const link of links) wider.push(link);
      seed = wider;
    }
    return false;
  }

  /** Whether the refilled flows, and every flow sharing a link with them, have a bottleneck. */
  private everyFlowBottlenecked(flows: readonly Flow[], links: readonly number[], epoch: number): boolean {
    for (const flow of flows) if (!this.hasBottleneck(flow, epoch)) return false;
    for (const link of links)
      for (const flow of this.linkFlows[link])
        if (flow.mark !== epoch && !this.hasBottleneck(flow, epoch)) return false;
    return true;
  }

  /** Refills every flow of the component of the changed links: every link reachable from them through flows that share links. */
  private settleComponent(): void {
    const now = this.queue.now;
    const epoch = ++this.markEpoch;
    const links = this.componentLinks;
    const flows = this.componentFlows;
    links.length = 0;
    flows.length = 0;
    const stack = this.stack;
    for (let i = 0; i < this.dirty.length; i++) stack.push(this.dirty[i]);
    while (stack.length > 0) {
      const link = stack.pop()!;
      if (this.linkMark[link] === epoch) continue;
      this.linkMark[link] = epoch;
      links.push(link);
      for (const flow of this.linkFlows[link]) {
        if (flow.mark === epoch) continue;
        flow.mark = epoch;
        flows.push(flow);
        for (let i = 0; i < flow.path.length; i++) if (this.linkMark[flow.path[i]] !== epoch) stack.push(flow.path[i]);
      }
    }
    for (const link of links) {
      this.remCap[link] = this.capacity[link];
      this.unfrozen[link] = this.linkFlows[link].length;
    }
    this.advance(flows, now);
    this.fill(links, flows.length);
    this.settle(links, flows, now);
  }

  /** Counts the bytes the flows moved at their old rates up to now, and clears their rates for a refill. */
  private advance(flows: readonly Flow[], now: number): void {
    for (const flow of flows) {
      flow.remaining = Math.max(0, flow.remaining - flow.rate * (now - flow.since));
      flow.since = now;
      flow.rate = -1;
    }
  }

  /**
   * Progressive filling of the flows without a rate (`left` of them) over `links`, whose
   * remCap and unfrozen hold the capacity left to them and how many of them cross each.
   */
  private fill(links: readonly number[], left: number): void {
    let active = this.active;
    let next = this.nextActive;
    active.length = 0;
    for (let i = 0; i < links.length; i++) active.push(links[i]);
    const saturated = this.stack;
    while (left > 0) {
      let bestShare = Infinity;
      next.length = 0;
      for (let i = 0; i < active.length; i++) {
        const link = active[i];
        const count = this.unfrozen[link];
        if (count > 0) {
          next.push(link);
          const share = this.remCap[link] / count;
          if (share < bestShare) bestShare = share;
        }
      }
      if (next.length === 0) break;
      [active, next] = [next, active];
      // Every link at the smallest fair share saturates at that level together (exact: freezing
      // a flow at the link's own share leaves that share unchanged), so symmetric patterns,
      // the common case in collectives, settle in a few levels instead of one link at a time.
      const level = bestShare * (1 + 1e-9);
      saturated.length = 0;
      for (let i = 0; i < active.length; i++)
        if (this.remCap[active[i]] / this.unfrozen[active[i]] <= level) saturated.push(active[i]);
      for (let s = 0; s < saturated.length; s++) {
        for (const flow of this.linkFlows[saturated[s]]) {
          if (flow.rate >= 0) continue;
          flow.rate = bestShare;
          left--;
          for (let i = 0; i < flow.path.length; i++) {
            const l = flow.path[i];
            this.remCap[l] -= bestShare;
            this.unfrozen[l]--;
          }
        }
      }
    }
    this.active = active;
    this.nextActive = next;
    saturated.length = 0;
  }

  /**
   * Whether one of the flow's links is full and carries no faster flow (max-min's condition for
   * every flow). Each link's load and fastest flow are summed once per check (`epoch`).
   */
  private hasBottleneck(flow: Flow, epoch: number): boolean {
    if (!(flow.rate > 0) || !Number.isFinite(flow.rate)) return false;
    for (let i = 0; i < flow.path.length; i++) {
      const link = flow.path[i];
      if (this.summedAt[link] !== epoch) {
        this.summedAt[link] = epoch;
        let load = 0;
        let fastest = 0;
        for (const other of this.linkFlows[link]) {
          load += other.rate;
          if (other.rate > fastest) fastest = other.rate;
        }
        this.linkLoad[link] = load;
        this.linkFastest[link] = fastest;
      }
      if (this.linkLoad[link] >= this.capacity[link] * (1 - 1e-9) && flow.rate >= this.linkFastest[link] * (1 - 1e-9))
        return true;
    }
    return false;
  }

  /** Reports the links' new loads and re-queues the drain of every flow whose end moved. */
  private settle(links: readonly number[], flows: readonly Flow[], now: number): void {
    if (this.onRate !== undefined)
      for (const link of links) this.onRate(now, link, Math.max(0, this.capacity[link] - this.remCap[link]));
    for (const flow of flows) {
      const due = now + flow.remaining / Math.max(flow.rate, 1e-9);
      // An unchanged rate leaves the queued drain event valid; skip re-queuing it.
      if (Math.abs(due - flow.due) <= 1e-9 * due) continue;
      flow.due = due;
      this.queue.at(due, this.drainEvent, flow);
    }
  }
}
