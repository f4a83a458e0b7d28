import { secondTreePosition } from '../algorithms/in-order-binary-tree.js';
import { generateSchedule } from '../algorithms/registry.js';
import { type CallShape, executorHosts, inPlaceLayout, ROOTED_COLLECTIVES, splitEven } from '../algorithms/schedule.js';
import type { TopologyGraph } from '../topology/topology-graph.js';
import { channelRings } from './channel-rings.js';
import { type ChannelFold, foldChannels } from './channel-symmetry.js';
import { type CorePool, corePools } from './core-pool.js';
import { EventQueue } from './event-queue.js';
import {
  BYTES_PER_US_PER_GBPS,
  coreShareRates,
  crowdedRanks,
  freshReadRateOf,
  freshReadWeight,
  localUs,
  rankHosts,
  transferRoute,
} from './flow-costs.js';
import { FlowNetwork } from './flow-network.js';
import { isChain, pipelineChunkCount } from './pipeline-chunks.js';
import { type Protocol, protocolOf } from './protocols.js';
import { type Program, STEP_LOCAL, STEP_RECV_REDUCE, STEP_SEND, programsOf } from './schedule-program.js';
import { type CallTrace, FlowBudgetExceeded, type SimCall, type SimOutcome } from './sim-call.js';
import { type CallRates, callRates, peerReadWriteCosts } from './working-set.js';
import { impliedLinks } from './implied-links.js';

/** Algorithms that are rings over the ranks, which the simulator runs as several channel rings. */
const RING_ALGORITHMS = new Set(['ring']);
/** The tree runs on the rings' channels too: each enters a host at another GPU, as NCCL's trees follow its rings. */
const TREE = 'tree';
/** A runner's key is channel x this + its program's index: a channel's schedule has fewer programs (channels) than this. */
const PROGRAMS_PER_CHANNEL = 64;
/** How long a watched walk runs before its pace may stop it short of its deadline. */
const PACE_AFTER_MS = 1000;
/** How often a watched walk reports its progress. */
const PROGRESS_INTERVAL_MS = 250;
/** Consumed messages a box keeps before it forgets them, so long calls do not grow its array without end. */
const CONSUMED_MESSAGES_KEPT = 64;

/** One message of an ordered pair on one channel; whichever of sender and receiver comes first makes it. */
interface Slot {
  /** When the message arrived; -1 before. */
  time: number;
  waiter: Runner | undefined;
  box: Box | undefined;
  wireBytes: number;
  /** Who posted the message: its call cannot end before the receiver has taken it. */
  sender: Runner | undefined;
  /** When the message started moving: a fused reduction overlaps the transfer from then on. */
  movingSince: number;
  /** The sender wrote the message's data earlier in the call (Program.fresh). */
  fresh: boolean;
}

/**
 * The messages of one ordered pair on one channel. They match in order, and they move in
 * order too, one at a time, as over one connection (a socket, a FIFO of GPU buffer slots):
 * a later message does not share the link with an earlier one still in flight. The sender
 * sets the route and its per-message delay the first time it sends.
 */
interface Box {
  slots: Slot[];
  head: number;
  posted: number;
  sending: boolean;
  waiting: Slot[];
  path: Int32Array | undefined;
  /** The path's links that can bind its flows (FlowNetwork.bindingPath), kept with it. */
  binding: Int32Array | undefined;
  delay: number;
}

/** One rank's walk of one program (a channel of its schedule). */
interface Runner {
  /** Tells a runner from a slot among the flow network's tags. */
  readonly isRunner: true;
  readonly program: Program;
  readonly device: number;
  readonly rank: number;
  readonly key: number;
  pc: number;
  /** Messages to this rank on this channel, by sender rank. */
  readonly inbox: Map<number, Box>;
  /**
   * Sends the receivers have not taken yet. As in the executor, the call ends only when they
   * have: shared memory is read in place, so the sender's buffer is busy until then.
   */
  undelivered: number;
  /** When the program ran to its end, to wait for its last sends to be taken; -1 before. */
  endedAt: number;
  /** Most schedules send to and receive from one or two peers over and over: the last box of each. */
  lastSendPeer: number;
  lastSendBox: Box | undefined;
  lastRecvPeer: number;
  lastRecvBox: Box | undefined;
  /** The step whose send overhead this rank has spent already (-1: none), so it is spent once. */
  overheadPaidAt: number;
  /** A traced call's record of when the runner reached each step (-1: not yet); the last entry is its end. */
  readonly starts: Float64Array | undefined;
}

/** A rank's channels, and when each of its calls returned. */
interface RankCalls {
  runners: Runner[];
  channelsDone: number;
  ends: number[];
}

const isRunner = (tag: Slot | Runner): tag is Runner => (tag as Runner).isRunner === true;

/**
 * Runs one collective call on a topology at flow level: every rank's schedule, exactly as the
 * executor would get it, walked step by step; sends become flows along routed links, shared
 * max-min fairly with every other flow in flight; a receive waits for its message to arrive
 * (data drained, plus the route's latency and the protocol's per-step cost). Ring algorithms
 * run as several channels (rings in different orders, each on its share of the data), as
 * NCCL does to use every NIC and every link of a mesh.
 */
export function simulateSchedules(graph: TopologyGraph, rankDevices: readonly number[], call: SimCall): SimOutcome {
  return new ScheduleFlows(graph, rankDevices, call).run();
}

/** The walk of one call: its ranks' runners, the messages between them and the network they load. */
class ScheduleFlows {
  private readonly graph: TopologyGraph;
  private readonly rankDevices: readonly number[];
  private readonly call: SimCall;
  private readonly protocol: Protocol;
  private readonly wakeUs: number;
  private readonly overheadUs: number;
  /** Bytes per microsecond a sender copies its message at before it goes on (0: sending costs the sender nothing per byte). */
  private readonly sendCopyRate: number;
  /** Whether receivers copy messages out of the senders' memory (thread ranks) rather than senders pushing them. */
  private readonly pull: boolean;
  private readonly freshReadRate: number | undefined;
  /** The part of a crowded rank's wake-up spent on a core (protocol.wakeWorkUs); undefined: all of it. */
  private readonly wakeWorkUs: number | undefined;
  /** The orders of the ranks on each channel. */
  private readonly channelOrders: number[][];
  private readonly rings: number[][];
  private readonly hosts: number[];
  private readonly hostCount: number;
  private readonly pools: Map<number, CorePool>;
  private readonly crowded: Set<number>;
  private readonly rates: CallRates;
  private readonly takeBackUsPerByte: Map<number, number>;
  /** Bytes per microsecond a rank reduces at; 0 where reduction is fused into the transfer (GPUs). */
  private readonly reduceRates: number[];
  /** Where ranks pull: each rank's local copies load what its reading of a peer's message would, its core's copy speed and the memory all the cores share. */
  private readonly copyPaths = new Map<number, Int32Array>();
  private readonly coreCopyRate: (path: Int32Array) => number;
  private readonly queue = new EventQueue();
  private readonly network: FlowNetwork;
  /** Set when channels are images of each other: one per class is walked, on folded links. */
  private readonly fold: ChannelFold | undefined;
  private readonly calls: number;
  private finished = 0;
  private lastDone = 0;
  /** Steps walked, over all ranks and calls, against all there are: a watched walk's progress. */
  private stepsDone = 0;
  private stepsTotal = 0;
  private readonly runnersByKey: Runner[][] = [];
  private readonly ranks = new Map<number, RankCalls>();
  private readonly all: Runner[] = [];

  constructor(graph: TopologyGraph, rankDevices: readonly number[], call: SimCall) {
    this.graph = graph;
    this.rankDevices = rankDevices;
    this.call = call;
    const n = rankDevices.length;
    const protocol = protocolOf(graph.topology, call.protocol);
    this.protocol = protocol;
    this.wakeUs = protocol.wakeUs ?? 0;
    this.overheadUs = protocol.overheadUs ?? 0;
    this.sendCopyRate = (protocol.sendCopyGBps ?? 0) * BYTES_PER_US_PER_GBPS;
    this.pull = protocol.pull === true;
    this.freshReadRate = freshReadRateOf(protocol);
    this.wakeWorkUs = protocol.wakeWorkUs;
    this.channelOrders =
      RING_ALGORITHMS.has(call.algorithm) || call.algorithm === TREE
        ? channelRings(graph, rankDevices)
        : [rankDevices.map((_, r) => r)];
    // NCCL's double binary tree runs on two copies of every channel (connect.cc duplicates them),
    // the second placing the hosts as NCCL's second tree does (mirrored, or shifted by one on an
    // odd count): a host inner in one tree is a leaf in the other, and both trees cross each NIC,
    // so every NIC carries at most two tree neighbours' traffic a round where an inner host of one
    // tree alone would carry three. tsccl's executor, whose calls name their chunk, runs one tree.
    this.rings =
      call.algorithm === TREE && call.chunkCount === undefined
        ? [...this.channelOrders, ...this.channelOrders]
        : this.channelOrders;
    this.hosts = rankHosts(graph, rankDevices);
    this.hostCount = Math.max(0, ...this.hosts) + 1;
    this.pools = corePools(rankDevices, this.hosts, protocol.rankCores);
    this.crowded = crowdedRanks(rankDevices, this.hosts, protocol.rankCores);
    const wholeCall: CallShape = {
      collective: call.collective,
      nranks: n,
      count: call.workingSetCount ?? call.count,
      root: call.root,
      inPlace: call.inPlace === true,
      chunkCount: 0,
    };
    this.rates = callRates(graph, rankDevices, wholeCall, call.elementBytes);
    this.takeBackUsPerByte = peerReadWriteCosts(graph, rankDevices, protocol, wholeCall, call.elementBytes);
    this.reduceRates = graph.devices.map(
      (d, i) => (d.reduceGBps ?? 0) * BYTES_PER_US_PER_GBPS * this.rates.reduceScale[i],
    );
    if (this.pull && n > 1)
      rankDevices.forEach((device, r) => {
        this.copyPaths.set(device, transferRoute(graph, rankDevices[(r + 1) % n], device, true));
      });
    this.coreCopyRate = coreShareRates(
      this.rates.capacities,
      [...this.copyPaths].filter(([device]) => this.crowded.has(device)).map(([, path]) => path),
      protocol.rankCores,
    );
    this.calls = Math.max(1, Math.floor(call.calls ?? 1));
    const shapes = this.rings.map((ring, c) => this.channelShape(ring, c));
    const classes = this.imageClasses(shapes);
    const walked = new Set(classes?.map((channels) => channels[0]) ?? this.rings.keys());
    for (const c of walked) this.addChannel(this.rings[c], c, shapes[c]);
    this.fold = classes === undefined ? undefined : this.foldOf(classes);
    if (classes !== undefined && this.fold === undefined)
      this.rings.forEach((ring, c) => {
        if (!walked.has(c)) this.addChannel(ring, c, shapes[c]);
      });
    // A traced call reports every link's rate as it changes, so none may be left out of the refills.
    const implied = call.trace === undefined ? impliedLinks(graph, this.rates.capacities) : undefined;
    const neverBinds = implied === undefined ? undefined : (this.fold?.foldMask(implied) ?? implied);
    this.network = new FlowNetwork(
      this.queue,
      this.fold?.capacities ?? this.rates.capacities,
      this.drained,
      neverBinds?.includes(1) ? neverBinds : undefined,
    );
    const trace = call.trace;
    if (trace !== undefined)
      this.network.onRate = (timeUs, link, bytesPerUs) => {
        trace.rates.push({ timeUs, link, bytesPerUs });
      };
  }

  /** Runs the call to its end on every rank and reports it. */
  run(): SimOutcome {
    const { queue, protocol, calls, ranks, all } = this;
    // Ranks that outnumber their cores begin the call as each gets a core, woken to it.
    for (const runner of all) {
      if (this.crowded.has(runner.device)) this.afterWake(runner, this.advance, runner);
      else queue.at(0, this.advance, runner);
    }
    queue.run(this.watchCheck());
    if (this.finished !== all.length)
      throw new Error(
        `simulation of ${this.call.algorithm} ${this.call.collective} stalled: ${all.length - this.finished} rank channels never finished`,
      );
    const timeUs = this.lastDone + protocol.baseUs;
    // Each call's fixed cost is added per call, as the walk leaves it out of one call's time too.
    let perCall = 0;
    for (const { ends } of ranks.values()) perCall += (ends[calls - 1] - ends[0]) / (calls - 1);
    const rankCallUs = calls === 1 ? timeUs : perCall / ranks.size + protocol.baseUs;
    if (this.call.trace !== undefined) this.traceRunners(this.call.trace);
    return {
      timeUs,
      rankCallUs,
      channels: this.rings.length,
      walkedChannels: new Set(this.all.map((runner) => Math.floor(runner.key / PROGRAMS_PER_CHANNEL))).size,
      linkBytes: this.fold?.unfold(this.network.carried) ?? this.network.carried,
      capacities: this.rates.capacities,
    };
  }

  /**
   * The event loop's periodic check of a watched call: stop past the deadline, or once the walk
   * has run long enough for its pace to tell and the pace says it would need more than twice the
   * time left (the time the whole walk would take goes with the stop); report progress now and then.
   */
  private watchCheck(): (() => void) | undefined {
    const watch = this.call.watch;
    if (watch === undefined) return undefined;
    this.stepsTotal = this.all.reduce((sum, r) => sum + r.program.kinds.length, 0) * this.calls;
    const clock = watch.clock ?? (() => performance.now());
    const walkStarted = clock();
    // The first check reports at once, so even a short watched walk says how far it got.
    let reportedAt = Number.NEGATIVE_INFINITY;
    return () => {
      const now = clock();
      const fraction = this.stepsDone / Math.max(1, this.stepsTotal);
      if (watch.deadlineMs !== undefined) {
        if (now > watch.deadlineMs) throw new FlowBudgetExceeded();
        const walked = now - walkStarted;
        if (
          walked >= PACE_AFTER_MS &&
          fraction > 0 &&
          (walked * (1 - fraction)) / fraction > 2 * (watch.deadlineMs - now)
        )
          throw new FlowBudgetExceeded(walked / fraction);
      }
      if (watch.progress !== undefined && now - reportedAt >= PROGRESS_INTERVAL_MS) {
        reportedAt = now;
        watch.progress(fraction);
      }
    };
  }

  /** Hands a traced call every runner's steps, with ranks and peers as the call's ranks rather than places on a ring. */
  private traceRunners(trace: CallTrace): void {
    for (const runner of this.all) {
      const channel = Math.floor(runner.key / PROGRAMS_PER_CHANNEL);
      const ring = this.rings[channel];
      const { kinds, peers, bytes, slices } = runner.program;
      trace.programs.push({
        rank: ring[runner.rank],
        channel,
        kinds,
        peers: peers.map((peer, i) => (kinds[i] === STEP_LOCAL ? -1 : ring[peer])),
        bytes,
        offsets: slices!.offsets,
        counts: slices!.counts,
        starts: runner.starts!,
      });
    }
  }

  /** The hosts of a channel's ranks in its order: the second copy of a tree's channel places them as NCCL's second tree does. */
  private channelHosts(ring: readonly number[], c: number): number[] {
    return ring.map((physical) =>
      c >= this.channelOrders.length ? secondTreePosition(this.hostCount, this.hosts[physical]) : this.hosts[physical],
    );
  }

  /** The call's shape on channel `c`, whose ranks lie in `ring`'s order. */
  private channelShape(ring: readonly number[], c: number): CallShape {
    const { call } = this;
    const shares = splitEven(call.count, this.rings.length);
    // A ring's ranks are renumbered along it; a rooted call keeps its root where the data is.
    return {
      collective: call.collective,
      nranks: this.rankDevices.length,
      count: shares[c].count,
      root: ring.indexOf(call.root),
      inPlace: call.inPlace === true,
      chunkCount:
        RING_ALGORITHMS.has(call.algorithm) && !isChain(call)
          ? (call.chunkCount ?? 0)
          : pipelineChunkCount(call, shares[c].count),
      // tsccl's executor (its calls name their chunk) gets the layout its communicator gives it;
      // a GPU library chains a server's GPUs in its tree even on one server.
      hosts: call.chunkCount === undefined ? this.channelHosts(ring, c) : executorHosts(this.channelHosts(ring, c)),
    };
  }

  /**
   * The channels in classes whose members may be images of each other (foldChannels): the
   * rings, and a double tree's second copies, when every member has the same shape. Undefined
   * where every channel must be walked: ranks that share cores or pull (their work is per
   * channel), a traced call (its trace is), back-to-back calls (a rank's next call waits for all
   * its channels), a single channel, a call that asks for every channel.
   */
  private imageClasses(shapes: readonly CallShape[]): number[][] | undefined {
    const { call } = this;
    if (this.pools.size > 0 || this.pull || call.trace !== undefined || this.calls > 1 || call.everyChannel === true)
      return undefined;
    const perClass = this.channelOrders.length;
    if (perClass < 2) return undefined;
    const classes: number[][] = [];
    for (let first = 0; first < this.rings.length; first += perClass)
      classes.push(Array.from({ length: perClass }, (_, i) => first + i));
    const same = (a: CallShape, b: CallShape) =>
      a.count === b.count &&
      (a.root === b.root || !ROOTED_COLLECTIVES.has(a.collective)) &&
      a.chunkCount === b.chunkCount &&
      a.hosts?.join() === b.hosts?.join();
    return classes.every((channels) => channels.every((c) => same(shapes[c], shapes[channels[0]])))
      ? classes
      : undefined;
  }

  /** The fold of the channel classes, from the routes their walked channels send on; undefined if they are not images. */
  private foldOf(classes: readonly (readonly number[])[]): ChannelFold | undefined {
    const { graph, rankDevices, rates, reduceRates, takeBackUsPerByte } = this;
    const n = rankDevices.length;
    const seen = new Set<number>();
    const pairs: [number, number][] = [];
    for (const runner of this.all) {
      const ring = this.rings[Math.floor(runner.key / PROGRAMS_PER_CHANNEL)];
      const { kinds, peers } = runner.program;
      for (let pc = 0; pc < kinds.length; pc++) {
        if (kinds[pc] !== STEP_SEND) continue;
        const from = ring[runner.rank];
        const to = ring[peers[pc]];
        if (seen.has(from * n + to)) continue;
        seen.add(from * n + to);
        pairs.push([from, to]);
      }
    }
    return foldChannels({
      rings: this.rings,
      classes,
      pairs,
      capacities: rates.capacities,
      route: (from, to) => transferRoute(graph, rankDevices[from], rankDevices[to], false),
      sameDelay: (a, b) => {
        const latency = graph.routeLatency(a);
        return (
          Math.abs(latency - graph.routeLatency(b)) <= 1e-9 * latency &&
          this.crossesNetwork(a) === this.crossesNetwork(b)
        );
      },
      sameRank: (a, b) => {
        const [da, db] = [rankDevices[a], rankDevices[b]];
        const [x, y] = [graph.devices[da], graph.devices[db]];
        return (
          reduceRates[da] === reduceRates[db] &&
          takeBackUsPerByte.get(da) === takeBackUsPerByte.get(db) &&
          rates.deviceScale[da] === rates.deviceScale[db] &&
          x.kind === y.kind &&
          x.memoryGBps === y.memoryGBps
        );
      },
    });
  }

  /** Every rank's runners for channel `c`, whose ranks lie in `ring`'s order and whose call has `shape`. */
  private addChannel(ring: readonly number[], c: number, shape: CallShape): void {
    const { call, rankDevices } = this;
    const n = rankDevices.length;
    for (let logical = 0; logical < n; logical++) {
      const schedule =
        call.generator === undefined
          ? generateSchedule(shape, logical, call.algorithm)
          : call.generator(shape, logical);
      const traced = call.trace !== undefined;
      const programs = programsOf(
        schedule,
        call.elementBytes,
        this.freshReadRate !== undefined,
        traced,
        shape.inPlace ? inPlaceLayout(shape, logical) : undefined,
      );
      programs.forEach((program, k) => {
        const key = c * PROGRAMS_PER_CHANNEL + k;
        const runner: Runner = {
          isRunner: true,
          program,
          device: rankDevices[ring[logical]],
          rank: logical,
          key,
          pc: 0,
          inbox: new Map(),
          undelivered: 0,
          endedAt: -1,
          lastSendPeer: -1,
          lastSendBox: undefined,
          lastRecvPeer: -1,
          lastRecvBox: undefined,
          overheadPaidAt: -1,
          starts: traced ? new Float64Array(program.kinds.length + 1).fill(-1) : undefined,
        };
        (this.runnersByKey[key] ??= [])[logical] = runner;
        this.all.push(runner);
        let rank = this.ranks.get(runner.device);
        if (rank === undefined) this.ranks.set(runner.device, (rank = { runners: [], channelsDone: 0, ends: [] }));
        rank.runners.push(runner);
      });
    }
  }

  /**
   * A flow drained. A drained message arrives after its route's latency and the protocol's step
   * cost, and the next message queued behind it on the same connection starts moving. A drained
   * local copy lets its rank go on.
   */
  private readonly drained = (tag: Slot | Runner): void => {
    if (isRunner(tag)) {
      this.advance(tag);
      return;
    }
    const slot = tag;
    const box = slot.box!;
    this.queue.at(this.queue.now + box.delay, this.deliver, slot);
    const next = box.waiting.shift();
    if (next === undefined) {
      box.sending = false;
    } else {
      this.startMoving(box, next);
    }
  };

  /** What a rank's step spends taking back lines of its destination that peers read since it last wrote them. */
  private takeBackUs(runner: Runner, pc: number): number {
    return (runner.program.peerReadWrites?.[pc] ?? 0) * (this.takeBackUsPerByte.get(runner.device) ?? 0);
  }

  /** When a rank's own work (a hand-off, a reduction, a copy) started now ends, on a core of its host. */
  private workEnds(runner: Runner, us: number): number {
    return this.pools.get(runner.device)?.finish(this.queue.now, us) ?? this.queue.now + us;
  }

  /**
   * Runs `action` once a rank is woken. A crowded rank whose protocol splits the wake-up
   * (wakeWorkUs) waits out its latency off the cores, where the other ranks' work goes on, then
   * takes a core for the rest; otherwise the whole wake-up is work on a core.
   */
  private afterWake<T>(runner: Runner, action: (arg: T) => void, arg: T): void {
    const { queue, wakeUs, wakeWorkUs } = this;
    if (wakeWorkUs === undefined || !this.crowded.has(runner.device)) {
      queue.at(this.workEnds(runner, wakeUs), action, arg);
      return;
    }
    queue.at(queue.now + wakeUs - wakeWorkUs, () => queue.at(this.workEnds(runner, wakeWorkUs), action, arg));
  }

  // Messages of one ordered pair on one channel match in order. A receiver may arrive before
  // its message is posted and a sender before the receiver: whichever comes first makes the slot.
  private boxOf(receiver: Runner, sender: number): Box {
    let box = receiver.inbox.get(sender);
    if (box === undefined) {
      box = {
        slots: [],
        head: 0,
        posted: 0,
        sending: false,
        waiting: [],
        path: undefined,
        binding: undefined,
        delay: 0,
      };
      receiver.inbox.set(sender, box);
    }
    return box;
  }

  private slotAt(slots: Slot[], index: number): Slot {
    if (index < slots.length) return slots[index];
    while (slots.length <= index)
      slots.push({
        time: -1,
        waiter: undefined,
        box: undefined,
        wireBytes: 0,
        movingSince: 0,
        sender: undefined,
        fresh: false,
      });
    return slots[index];
  }

  private startMoving(box: Box, slot: Slot): void {
    slot.movingSince = this.queue.now;
    this.network.start(box.path!, slot.wireBytes, slot, box.binding);
  }

  /** Whether a route leaves its host (a message pays the protocol's network step). */
  private crossesNetwork(route: Int32Array): boolean {
    return Array.from(route).some((l) => this.graph.link(l).family === 'network');
  }

  /** The box of the sender's messages to `peer` on its channel; the first send routes it. */
  private sendBox(sender: Runner, peer: number): Box {
    const { graph, protocol } = this;
    const receiver = this.runnersByKey[sender.key][peer];
    const box = this.boxOf(receiver, sender.rank);
    if (box.path === undefined) {
      box.path = transferRoute(graph, sender.device, receiver.device, this.pull);
      box.delay =
        graph.routeLatency(box.path) + protocol.stepUs + (this.crossesNetwork(box.path) ? protocol.netStepUs : 0);
      if (this.fold !== undefined) box.path = this.fold.fold(box.path);
      box.binding = this.network.bindingPath(box.path);
    }
    return box;
  }

  /**
   * One channel of a rank's call is over. When all its channels are, the rank's call returns,
   * and the rank makes its next call, if it has one: at once, or, where ranks outnumber their
   * cores, as it gets a core again, as it began its first.
   */
  private readonly finish = (runner: Runner): void => {
    const rank = this.ranks.get(runner.device)!;
    if (++rank.channelsDone < rank.runners.length) return;
    rank.channelsDone = 0;
    rank.ends.push(this.queue.now);
    if (rank.ends.length < this.calls) {
      for (const r of rank.runners) {
        r.pc = 0;
        r.endedAt = -1;
        r.overheadPaidAt = -1;
        if (this.crowded.has(r.device)) this.afterWake(r, this.advance, r);
        else this.advance(r);
      }
      return;
    }
    this.finished += rank.runners.length;
    this.lastDone = Math.max(this.lastDone, this.queue.now);
  };

  /** The receiver is done with one of the sender's messages, which releases the sender's buffer. */
  private readonly release = (sender: Runner): void => {
    if (--sender.undelivered > 0 || sender.endedAt < 0) return;
    // A CPU sender that ended earlier had to wait for this: with a core of its own it spins and
    // sees it after the protocol's releaseUs; one that outnumbers the cores is woken for it. One
    // that ended just now sees it at once.
    const isCrowded = this.crowded.has(sender.device);
    const waitUs = isCrowded ? this.wakeUs : (this.protocol.releaseUs ?? this.wakeUs);
    if (waitUs <= 0 || this.queue.now <= sender.endedAt) this.finish(sender);
    else if (isCrowded) this.afterWake(sender, this.finish, sender);
    else this.queue.at(this.workEnds(sender, waitUs), this.finish, sender);
  };

  /**
   * A copy a rank makes (a pulled message, its own block): a flow from now, or, where ranks
   * outnumber the cores, work on the rank's core. Returns when it starts moving.
   */
  private copy(runner: Runner, path: Int32Array, bytes: number, tag: Slot | Runner): number {
    if (!this.crowded.has(runner.device)) {
      this.network.start(path, bytes, tag);
      return this.queue.now;
    }
    const us = bytes / this.coreCopyRate(path);
    const end = this.workEnds(runner, us);
    this.network.carryUntil(path, bytes, end, tag);
    return end - us;
  }

  /**
   * The receiver starts copying a pulled message. Folding it into the destination reads that
   * too, and loads the reader's copy path by its foldTraffic (working-set.ts) times a copy's
   * bytes. Data its sender wrote in this call comes from the sender's cache, at most at the
   * protocol's freshReadGBps: it costs as many more bytes as the reader's copy speed here
   * exceeds that.
   */
  private readonly startPull = (slot: Slot): void => {
    const { rates } = this;
    const reader = slot.waiter!;
    if (reader.program.kinds[reader.pc] === STEP_RECV_REDUCE) slot.wireBytes *= rates.foldTraffic[reader.device];
    if (slot.fresh)
      slot.wireBytes *= freshReadWeight(
        this.graph.devices[reader.device],
        rates.deviceScale[reader.device],
        this.freshReadRate,
      );
    slot.movingSince = this.copy(reader, slot.box!.path!, slot.wireBytes, slot);
  };

  private readonly deliver = (slot: Slot): void => {
    slot.time = this.queue.now;
    const waiter = slot.waiter;
    slot.waiter = undefined;
    if (waiter === undefined) return;
    // A CPU rank that had to wait for the message is woken for it, which takes a core; one that
    // pulled it was busy copying it, and goes on.
    if (this.wakeUs > 0 && !this.pull) this.afterWake(waiter, this.advance, waiter);
    else this.advance(waiter);
  };

  /** A rank's local copy of the step before its pc moves along its core's copy path. */
  private readonly startLocalCopy = (runner: Runner): void => {
    this.copy(runner, this.copyPaths.get(runner.device)!, runner.program.bytes[runner.pc - 1], runner);
  };

  /** Walks a rank's program from its pc until it must wait (or to its end). */
  private readonly advance = (runner: Runner): void => {
    const { program } = runner;
    const length = program.kinds.length;
    const starts = runner.starts;
    while (runner.pc < length) {
      if (starts !== undefined && starts[runner.pc] < 0) starts[runner.pc] = this.queue.now;
      const kind = program.kinds[runner.pc];
      const wait =
        kind === STEP_SEND ? this.send(runner) : kind === STEP_LOCAL ? this.local(runner) : this.receive(runner);
      if (wait) return;
    }
    if (starts !== undefined && starts[length] < 0) starts[length] = this.queue.now;
    // The executor returns once every send has been consumed, so the buffers can be reused.
    if (runner.undelivered > 0) runner.endedAt = this.queue.now;
    else this.finish(runner);
  };

  /** Posts the send at the runner's pc; true if the runner must wait (an event resumes it). */
  private send(runner: Runner): boolean {
    const { program } = runner;
    const { queue, protocol, wakeUs } = this;
    const pc = runner.pc;
    const peer = program.peers[pc];
    if (this.overheadUs > 0 && runner.overheadPaidAt !== pc) {
      // The sender's CPU builds and hands over the message before a byte of it moves.
      runner.overheadPaidAt = pc;
      queue.at(this.workEnds(runner, this.overheadUs), this.advance, runner);
      return true;
    }
    if (runner.lastSendPeer !== peer) {
      runner.lastSendPeer = peer;
      runner.lastSendBox = this.sendBox(runner, peer);
    }
    const box = runner.lastSendBox!;
    const slot = this.slotAt(box.slots, box.posted++);
    slot.box = box;
    slot.sender = runner;
    runner.undelivered++;
    slot.wireBytes = program.bytes[pc] / protocol.efficiency;
    slot.fresh = program.fresh?.[pc] === 1;
    if (this.pull) {
      // The message waits for its receiver to copy it; one already waiting is woken to.
      const waiter = slot.waiter;
      if (waiter !== undefined && wakeUs > 0) this.afterWake(waiter, this.startPull, slot);
      else if (waiter !== undefined) queue.at(queue.now, this.startPull, slot);
    } else if (box.sending) {
      box.waiting.push(slot);
    } else {
      box.sending = true;
      this.startMoving(box, slot);
    }
    runner.pc++;
    this.stepsDone++;
    if (this.sendCopyRate > 0) {
      queue.at(this.workEnds(runner, program.bytes[pc] / this.sendCopyRate), this.advance, runner);
      return true;
    }
    return false;
  }

  /** Takes the message the receive at the runner's pc waits for, if it is there; true if the runner must wait. */
  private receive(runner: Runner): boolean {
    const { program } = runner;
    const { queue } = this;
    const pc = runner.pc;
    const kind = program.kinds[pc];
    const peer = program.peers[pc];
    if (runner.lastRecvPeer !== peer) {
      runner.lastRecvPeer = peer;
      runner.lastRecvBox = this.boxOf(runner, peer);
    }
    const box = runner.lastRecvBox!;
    const slot = this.slotAt(box.slots, box.head);
    if (slot.time < 0) {
      // A pulled message that is there moves as this rank copies it, at once or after a
      // hand-off; one not posted yet waits for its sender, who wakes this rank to it.
      const posted = this.pull && slot.box !== undefined;
      slot.waiter = runner;
      // A rank pays a hand-off for every message it pulls, one already there too: crowded, for
      // the wake-up; with a core, for the work of the step, which its other work does not hide
      // (messages taken as there at once, or as seen a hand-off after they were posted, priced
      // the direct algorithms below what they measure).
      if (posted) this.afterWake(runner, this.startPull, slot);
      return true;
    }
    if (++box.head >= CONSUMED_MESSAGES_KEPT) {
      // Forget consumed messages; a consumed slot was always posted, so posted >= head.
      box.slots.splice(0, box.head);
      box.posted -= box.head;
      box.head = 0;
    }
    runner.pc++;
    this.stepsDone++;
    const reduceRate = kind === STEP_RECV_REDUCE ? this.reduceRates[runner.device] : 0;
    // The executor reduces straight from the sender's memory, one pass for move and
    // reduce, so only the part of the reduction longer than the transfer adds time.
    // The receiver's CPU spends the protocol's overhead taking the message in, too.
    const extra =
      this.overheadUs +
      this.takeBackUs(runner, pc) +
      (reduceRate > 0 ? Math.max(0, program.bytes[pc] / reduceRate - (slot.time - slot.movingSince)) : 0);
    if (extra > 0) {
      const end = this.workEnds(runner, extra);
      queue.at(end, this.release, slot.sender!);
      queue.at(end, this.advance, runner);
      return true;
    }
    this.release(slot.sender!);
    return false;
  }

  /** Starts the local step (a copy or a reduction on the rank's own memory) at the runner's pc; the runner always waits for it. */
  private local(runner: Runner): boolean {
    const { program } = runner;
    const pc = runner.pc;
    runner.pc++;
    this.stepsDone++;
    const copyPath = program.peers[pc] === 1 ? this.copyPaths.get(runner.device) : undefined;
    const takeBack = this.takeBackUs(runner, pc);
    if (copyPath === undefined) {
      const us =
        takeBack +
        localUs(this.graph.devices[runner.device], program.bytes[pc], program.peers[pc], this.rates, runner.device);
      this.queue.at(this.workEnds(runner, us), this.advance, runner);
    } else if (takeBack > 0) this.queue.at(this.workEnds(runner, takeBack), this.startLocalCopy, runner);
    else this.startLocalCopy(runner);
    return true;
  }
}
