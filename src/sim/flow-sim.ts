import { secondTreePosition } from '../algorithms/in-order-binary-tree.js';
import { generateSchedule } from '../algorithms/registry.js';
import { type CallShape, type Collective, REDUCING_COLLECTIVES, type ScheduleGenerator, executorHosts, splitEven } from '../algorithms/schedule.js';
import { BY_REFERENCE_MIN_BYTES, ONE_SHOT, oneShotCount, oneShotReads } from '../exec/one-shot.js';
import { SWITCH_KINDS } from '../topology/catalog.js';
import type { TopologyGraph } from '../topology/topology-graph.js';
import type { Device } from '../topology/topology-schema.js';
import { channelRings } from './channel-rings.js';
import { corePools } from './core-pool.js';
import { EventQueue } from './event-queue.js';
import { FlowNetwork } from './flow-network.js';
import { nvlsFillUs, nvlsSaturatedUs } from './nvls-pipeline.js';
import { isChain, pipelineChunkCount } from './pipeline-chunks.js';
import { type CallRates, callRates, peerReadWriteCosts } from './working-set.js';
import { type Protocol, protocolOf } from './protocols.js';
import { type Program, STEP_LOCAL, STEP_RECV, STEP_RECV_REDUCE, STEP_SEND, programsOf } from './schedule-program.js';

export interface SimCall {
  readonly collective: Collective;
  /** Elements per rank as CallShape counts them (per peer for allToAll, per rank for allGather). */
  readonly count: number;
  readonly elementBytes: number;
  readonly root: number;
  readonly algorithm: string;
  readonly protocol: string;
  /** The executor's chunk in elements, to simulate exactly what it runs; absent: the simulator's GPU-library chunking. */
  readonly chunkCount?: number;
  /**
   * How many times each rank makes the call back to back, as a benchmark times it (default 1).
   * A rank starts its next call as soon as its last one returned, so ranks with less to do run
   * ahead, as far as their sends let them.
   */
  readonly calls?: number;
  /** The count whose working set sets a CPU host's cache tiers (default `count`): a stand-in for a larger call keeps that call's memory speeds. */
  readonly workingSetCount?: number;
  /** A pattern that is no collective's algorithm (nccl-tests' sendrecv), run instead of the registry's `algorithm`. */
  readonly generator?: ScheduleGenerator;
}

export interface SimOutcome {
  /** From the start until the last rank's last call returned. */
  readonly timeUs: number;
  /**
   * What a benchmark that times back-to-back calls on every rank reports: the mean over ranks of
   * the time a rank took per call after its first (which warms up and sets how far ranks run
   * ahead of each other); timeUs where there is one call. The one-shot and in-switch paths
   * are modelled one call at a time: every rank waits for all its peers in each call, so
   * back-to-back calls barely overlap, and they report their single call's time.
   */
  readonly rankCallUs: number;
  readonly channels: number;
  /** Bytes each directed link carried (on the wire, protocol overhead included). */
  readonly linkBytes: Float64Array;
  /** Each link's capacity in this call (bytes/us): a CPU host's cache tiers scale its links by the call's working set. */
  readonly capacities: Float64Array;
}

/** Algorithms that are rings over the ranks, which the simulator runs as several channel rings. */
const RING_ALGORITHMS = new Set(['ring']);
/** The tree runs on the rings' channels too: each enters a host at another GPU, as NCCL's trees follow its rings. */
const TREE = 'tree';

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
 * Runs one collective call on a topology at flow level: every rank's schedule, exactly as the
 * executor would get it, walked step by step; sends become flows along routed links, shared
 * max-min fairly with every other flow in flight; a receive waits for its message to arrive
 * (data drained, plus the route's latency and the protocol's per-step cost). Ring algorithms
 * run as several channels (rings in different orders, each on its share of the data), as
 * NCCL does to use every NIC and every link of a mesh.
 */
export function simulateFlows(graph: TopologyGraph, rankDevices: readonly number[], call: SimCall): SimOutcome {
  if (call.algorithm === 'nvls') return simulateNvls(graph, rankDevices, call);
  if (call.algorithm === ONE_SHOT) return simulateOneShot(graph, rankDevices, call);
  const n = rankDevices.length;
  const protocol = protocolOf(graph.topology, call.protocol);
  const wakeUs = protocol.wakeUs ?? 0;
  const overheadUs = protocol.overheadUs ?? 0;
  const sendCopyRate = (protocol.sendCopyGBps ?? 0) * 1000;
  const pull = protocol.pull === true;
  const freshReadRate = freshReadRateOf(protocol);
  const channelOrders = RING_ALGORITHMS.has(call.algorithm) || call.algorithm === TREE ? channelRings(graph, rankDevices) : [rankDevices.map((_, r) => r)];
  // NCCL's double binary tree runs on two copies of every channel (connect.cc duplicates them),
  // the second placing the hosts as NCCL's second tree does (mirrored, or shifted by one on an
  // odd count): a host inner in one tree is a leaf in the other, and both trees cross each NIC,
  // so every NIC carries at most two tree neighbours' traffic a round where an inner host of one
  // tree alone would carry three. tsccl's executor, whose calls name their chunk, runs one tree.
  const rings = call.algorithm === TREE && call.chunkCount === undefined ? [...channelOrders, ...channelOrders] : channelOrders;
  const hosts = rankHosts(graph, rankDevices);
  const hostCount = Math.max(0, ...hosts) + 1;
  const channelHosts = (ring: readonly number[], c: number) => ring.map((physical) => (c >= channelOrders.length ? secondTreePosition(hostCount, hosts[physical]) : hosts[physical]));
  const pools = corePools(rankDevices, hosts, protocol.rankCores);
  const crowded = crowdedRanks(rankDevices, hosts, protocol.rankCores);
  const wholeCall: CallShape = { collective: call.collective, nranks: n, count: call.workingSetCount ?? call.count, root: call.root, inPlace: false, chunkCount: 0 };
  const rates = callRates(graph, rankDevices, wholeCall, call.elementBytes);
  const takeBackUsPerByte = peerReadWriteCosts(graph, rankDevices, protocol, wholeCall, call.elementBytes);
  /** What a rank's step spends taking back lines of its destination that peers read since it last wrote them. */
  const takeBackUs = (runner: Runner, pc: number): number => (runner.program.peerReadWrites?.[pc] ?? 0) * (takeBackUsPerByte.get(runner.device) ?? 0);
  /** When a rank's own work (a hand-off, a reduction, a copy) started now ends, on a core of its host. */
  const workEnds = (runner: Runner, us: number): number => pools.get(runner.device)?.finish(queue.now, us) ?? queue.now + us;
  /**
   * Runs `action` once a rank is woken. A crowded rank whose protocol splits the wake-up
   * (wakeWorkUs) waits out its latency off the cores, where the other ranks' work goes on, then
   * takes a core for the rest; otherwise the whole wake-up is work on a core.
   */
  const wakeWorkUs = protocol.wakeWorkUs;
  const afterWake = <T>(runner: Runner, action: (arg: T) => void, arg: T): void => {
    if (wakeWorkUs === undefined || !crowded.has(runner.device)) {
      queue.at(workEnds(runner, wakeUs), action, arg);
      return;
    }
    queue.at(queue.now + wakeUs - wakeWorkUs, () => queue.at(workEnds(runner, wakeWorkUs), action, arg));
  };
  // Bytes per microsecond a rank reduces at; 0 where reduction is fused into the transfer (GPUs).
  const reduceRates = graph.devices.map((d, i) => (d.reduceGBps ?? 0) * 1000 * rates.reduceScale[i]);
  // Where ranks pull, a rank's local copy loads what its reading of a peer's message would: its
  // core's copy speed and the memory all the cores share.
  const copyPaths = new Map<number, Int32Array>();
  if (pull && n > 1) rankDevices.forEach((device, r) => copyPaths.set(device, transferRoute(graph, rankDevices[(r + 1) % n], device, true)));
  const coreCopyRate = coreShareRates(rates.capacities, [...copyPaths].filter(([device]) => crowded.has(device)).map(([, path]) => path), protocol.rankCores);
  const queue = new EventQueue();
  // A drained message arrives after its route's latency and the protocol's step cost; the next
  // message queued behind it on the same connection starts moving. A drained local copy lets its
  // rank go on.
  const network = new FlowNetwork(queue, rates.capacities, (tag: Slot | Runner) => {
    if (isRunner(tag)) { advance(tag); return; }
    const slot = tag;
    const box = slot.box!;
    queue.at(queue.now + box.delay, deliver, slot);
    const next = box.waiting.shift();
    if (next === undefined) {
      box.sending = false;
    } else {
      startMoving(box, next);
    }
  });

  interface Slot {
    time: number; waiter: Runner | undefined; box: Box | undefined; wireBytes: number;
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
    slots: Slot[]; head: number; posted: number; sending: boolean; waiting: Slot[];
    path: Int32Array | undefined; delay: number;
  }
  interface Runner {
    /** Tells a runner from a slot among the flow network's tags. */
    readonly isRunner: true;
    readonly program: Program; readonly device: number; readonly rank: number; readonly key: number; pc: number;
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
  }
  // Messages of one ordered pair on one channel match in order. A receiver may arrive before
  // its message is posted and a sender before the receiver: whichever comes first makes the slot.
  const boxOf = (receiver: Runner, sender: number): Box => {
    let box = receiver.inbox.get(sender);
    if (box === undefined) {
      box = { slots: [], head: 0, posted: 0, sending: false, waiting: [], path: undefined, delay: 0 };
      receiver.inbox.set(sender, box);
    }
    return box;
  };
  const slotAt = (slots: Slot[], index: number): Slot => {
    if (index < slots.length) return slots[index];
    while (slots.length <= index) slots.push({ time: -1, waiter: undefined, box: undefined, wireBytes: 0, movingSince: 0, sender: undefined, fresh: false });
    return slots[index];
  };
  const isRunner = (tag: Slot | Runner): tag is Runner => (tag as Runner).isRunner === true;
  const startMoving = (box: Box, slot: Slot): void => {
    slot.movingSince = queue.now;
    network.start(box.path!, slot.wireBytes, slot);
  };
  const sendBox = (sender: Runner, peer: number): Box => {
    const receiver = runnersByKey[sender.key][peer];
    const box = boxOf(receiver, sender.rank);
    if (box.path === undefined) {
      box.path = transferRoute(graph, sender.device, receiver.device, pull);
      const crossesNetwork = Array.from(box.path).some((l) => graph.link(l).family === 'network');
      box.delay = graph.routeLatency(box.path) + protocol.stepUs + (crossesNetwork ? protocol.netStepUs : 0);
    }
    return box;
  };
  const calls = Math.max(1, Math.floor(call.calls ?? 1));
  let finished = 0;
  let lastDone = 0;

  /**
   * One channel of a rank's call is over. When all its channels are, the rank's call returns,
   * and the rank makes its next call, if it has one: at once, or, where ranks outnumber their
   * cores, as it gets a core again, as it began its first.
   */
  const finish = (runner: Runner): void => {
    const rank = ranks.get(runner.device)!;
    if (++rank.channelsDone < rank.runners.length) return;
    rank.channelsDone = 0;
    rank.ends.push(queue.now);
    if (rank.ends.length < calls) {
      for (const r of rank.runners) {
        r.pc = 0;
        r.endedAt = -1;
        r.overheadPaidAt = -1;
        if (crowded.has(r.device)) afterWake(r, advance, r);
        else advance(r);
      }
      return;
    }
    finished += rank.runners.length;
    lastDone = Math.max(lastDone, queue.now);
  };

  /** The receiver is done with one of the sender's messages, which releases the sender's buffer. */
  const release = (sender: Runner): void => {
    if (--sender.undelivered > 0 || sender.endedAt < 0) return;
    // A CPU sender that ended earlier had to wait for this: with a core of its own it spins and
    // sees it after the protocol's releaseUs; one that outnumbers the cores is woken for it. One
    // that ended just now sees it at once.
    const isCrowded = crowded.has(sender.device);
    const waitUs = isCrowded ? wakeUs : protocol.releaseUs ?? wakeUs;
    if (waitUs <= 0 || queue.now <= sender.endedAt) finish(sender);
    else if (isCrowded) afterWake(sender, finish, sender);
    else queue.at(workEnds(sender, waitUs), finish, sender);
  };

  /**
   * A copy a rank makes (a pulled message, its own block): a flow from now, or, where ranks
   * outnumber the cores, work on the rank's core. Returns when it starts moving.
   */
  const copy = (runner: Runner, path: Int32Array, bytes: number, tag: Slot | Runner): number => {
    if (!crowded.has(runner.device)) {
      network.start(path, bytes, tag);
      return queue.now;
    }
    const us = bytes / coreCopyRate(path);
    const end = workEnds(runner, us);
    network.carryUntil(path, bytes, end, tag);
    return end - us;
  };

  /**
   * The receiver starts copying a pulled message. Folding it into the destination reads that
   * too, and loads the reader's copy path by its foldTraffic (working-set.ts) times a copy's bytes. Data its sender wrote in this call comes from the
   * sender's cache, at most at the protocol's freshReadGBps: it costs as many more bytes as the
   * reader's copy speed here exceeds that.
   */
  const startPull = (slot: Slot): void => {
    const reader = slot.waiter!;
    if (reader.program.kinds[reader.pc] === STEP_RECV_REDUCE) slot.wireBytes *= rates.foldTraffic[reader.device];
    if (slot.fresh) slot.wireBytes *= freshReadWeight(graph.devices[reader.device], rates.deviceScale[reader.device], freshReadRate);
    slot.movingSince = copy(reader, slot.box!.path!, slot.wireBytes, slot);
  };

  const deliver = (slot: Slot): void => {
    slot.time = queue.now;
    const waiter = slot.waiter;
    slot.waiter = undefined;
    if (waiter === undefined) return;
    // A CPU rank that had to wait for the message is woken for it, which takes a core; one that
    // pulled it was busy copying it, and goes on.
    if (wakeUs > 0 && !pull) afterWake(waiter, advance, waiter);
    else advance(waiter);
  };

  /** A rank's local copy of the step before its pc moves along its core's copy path. */
  const startLocalCopy = (runner: Runner): void => {
    copy(runner, copyPaths.get(runner.device)!, runner.program.bytes[runner.pc - 1], runner);
  };

  const advance = (runner: Runner): void => {
    const { program } = runner;
    const length = program.kinds.length;
    while (runner.pc < length) {
      const pc = runner.pc;
      const kind = program.kinds[pc];
      const peer = program.peers[pc];
      if (kind === STEP_SEND) {
        if (overheadUs > 0 && runner.overheadPaidAt !== pc) {
          // The sender's CPU builds and hands over the message before a byte of it moves.
          runner.overheadPaidAt = pc;
          queue.at(workEnds(runner, overheadUs), advance, runner);
          return;
        }
        if (runner.lastSendPeer !== peer) {
          runner.lastSendPeer = peer;
          runner.lastSendBox = sendBox(runner, peer);
        }
        const box = runner.lastSendBox!;
        const slot = slotAt(box.slots, box.posted++);
        slot.box = box;
        slot.sender = runner;
        runner.undelivered++;
        slot.wireBytes = program.bytes[pc] / protocol.efficiency;
        slot.fresh = program.fresh?.[pc] === 1;
        if (pull) {
          // The message waits for its receiver to copy it; one already waiting is woken to.
          const waiter = slot.waiter;
          if (waiter !== undefined && wakeUs > 0) afterWake(waiter, startPull, slot);
          else if (waiter !== undefined) queue.at(queue.now, startPull, slot);
        } else if (box.sending) {
          box.waiting.push(slot);
        } else {
          box.sending = true;
          startMoving(box, slot);
        }
        runner.pc++;
        if (sendCopyRate > 0) {
          queue.at(workEnds(runner, program.bytes[pc] / sendCopyRate), advance, runner);
          return;
        }
      } else if (kind === STEP_RECV || kind === STEP_RECV_REDUCE) {
        if (runner.lastRecvPeer !== peer) {
          runner.lastRecvPeer = peer;
          runner.lastRecvBox = boxOf(runner, peer);
        }
        const box = runner.lastRecvBox!;
        const slot = slotAt(box.slots, box.head);
        if (slot.time < 0) {
          // A pulled message that is there moves as this rank copies it, at once or after a
          // hand-off; one not posted yet waits for its sender, who wakes this rank to it.
          const posted = pull && slot.box !== undefined;
          slot.waiter = runner;
          if (posted) {
            // A rank pays a hand-off for every message it pulls, one already there too.
            // Crowded, for the wake-up: in four regret grids, 8 ranks on 2 cores all-reduced 64 B
            // to 4 KiB by direct (14 messages a rank, 12 of them in runs) in 143-241 us, by ring
            // (14, none in runs) in 166-265, by recursive doubling (3) in 55-95. With a core, for
            // the work of the step: the hand-off tune measures (a ring step of 8 B less recursive
            // doubling's) behaves as the rank's own work, which its other work does not hide.
            // (Taking such messages as there at once priced a 2-rank direct all-gather of 64 B,
            // whose ranks post and then copy their own block, at the call alone, 1.5-1.9 us,
            // against the ring's call and hand-off; the regret grids time the two alike, 5-10 us.
            // Taking them as seen a hand-off after they were posted hid that copy under the
            // hand-off: 16 KiB a rank priced 2.7 us, where it took 3.6-4.4 out of place and
            // 2.9-3.5 in place, and the tuner ran it by direct at 1.2-1.5x the one-shot path's
            // time in the grids of the forty-seventh to forty-ninth sessions.)
            afterWake(runner, startPull, slot);
          }
          return;
        }
        if (++box.head >= 64) {
          // Forget consumed messages; a consumed slot was always posted, so posted >= head.
          box.slots.splice(0, box.head);
          box.posted -= box.head;
          box.head = 0;
        }
        runner.pc++;
        const reduceRate = kind === STEP_RECV_REDUCE ? reduceRates[runner.device] : 0;
        // The executor reduces straight from the sender's memory, one pass for move and
        // reduce, so only the part of the reduction longer than the transfer adds time.
        // The receiver's CPU spends the protocol's overhead taking the message in, too.
        const extra = overheadUs + takeBackUs(runner, pc) + (reduceRate > 0 ? Math.max(0, program.bytes[pc] / reduceRate - (slot.time - slot.movingSince)) : 0);
        if (extra > 0) {
          const end = workEnds(runner, extra);
          queue.at(end, release, slot.sender!);
          queue.at(end, advance, runner);
          return;
        }
        release(slot.sender!);
      } else if (kind === STEP_LOCAL) {
        runner.pc++;
        const copyPath = program.peers[pc] === 1 ? copyPaths.get(runner.device) : undefined;
        const takeBack = takeBackUs(runner, pc);
        if (copyPath === undefined) queue.at(workEnds(runner, takeBack + localUs(graph.devices[runner.device], program.bytes[pc], program.peers[pc], rates, runner.device)), advance, runner);
        else if (takeBack > 0) queue.at(workEnds(runner, takeBack), startLocalCopy, runner);
        else startLocalCopy(runner);
        return;
      }
    }
    // The executor returns once every send has been consumed, so the buffers can be reused.
    if (runner.undelivered > 0) runner.endedAt = queue.now;
    else finish(runner);
  };

  const runnersByKey: Runner[][] = [];
  /** Every rank's channels, and when each of its calls returned. */
  const ranks = new Map<number, { runners: Runner[]; channelsDone: number; ends: number[] }>();
  const shares = splitEven(call.count, rings.length);
  const all: Runner[] = [];
  rings.forEach((ring, c) => {
    // A ring's ranks are renumbered along it; a rooted call keeps its root where the data is.
    const shape: CallShape = {
      collective: call.collective, nranks: n, count: shares[c].count, root: ring.indexOf(call.root), inPlace: false,
      chunkCount: RING_ALGORITHMS.has(call.algorithm) && !isChain(call) ? (call.chunkCount ?? 0) : pipelineChunkCount(call, shares[c].count),
      // tsccl's executor (its calls name their chunk) gets the layout its communicator gives it;
      // a GPU library chains a server's GPUs in its tree even on one server.
      hosts: call.chunkCount === undefined ? channelHosts(ring, c) : executorHosts(channelHosts(ring, c)),
    };
    for (let logical = 0; logical < n; logical++) {
      const schedule = call.generator === undefined ? generateSchedule(shape, logical, call.algorithm) : call.generator(shape, logical);
      const programs = programsOf(schedule, call.elementBytes, freshReadRate !== undefined);
      programs.forEach((program, k) => {
        const key = c * 64 + k;
        const runner: Runner = {
          isRunner: true, program, device: rankDevices[ring[logical]], rank: logical, key, pc: 0, inbox: new Map(), undelivered: 0, endedAt: -1,
          lastSendPeer: -1, lastSendBox: undefined, lastRecvPeer: -1, lastRecvBox: undefined, overheadPaidAt: -1,
        };
        (runnersByKey[key] ??= [])[logical] = runner;
        all.push(runner);
        let rank = ranks.get(runner.device);
        if (rank === undefined) ranks.set(runner.device, (rank = { runners: [], channelsDone: 0, ends: [] }));
        rank.runners.push(runner);
      });
    }
  });
  // Ranks that outnumber their cores begin the call as each gets a core, woken to it.
  for (const runner of all) {
    if (crowded.has(runner.device)) afterWake(runner, advance, runner);
    else queue.at(0, advance, runner);
  }
  queue.run();
  if (finished !== all.length) throw new Error(`simulation of ${call.algorithm} ${call.collective} stalled: ${all.length - finished} rank channels never finished`);
  const timeUs = lastDone + protocol.baseUs;
  // Each call's fixed cost is added per call, as the walk leaves it out of one call's time too.
  let perCall = 0;
  for (const { ends } of ranks.values()) perCall += (ends[calls - 1] - ends[0]) / (calls - 1);
  const rankCallUs = calls === 1 ? timeUs : perCall / ranks.size + protocol.baseUs;
  return { timeUs, rankCallUs, channels: rings.length, linkBytes: network.carried, capacities: network.capacity };
}

/**
 * What a rank that outnumbers the cores copies at over a path, while it has a core: each link's
 * capacity, shared by the cores of the ranks that copy over it where there are fewer cores than
 * such ranks. Such a copy holds its rank's core (the reader's thread does it), so the ranks'
 * copies and hand-offs take turns on the cores; as flows, 8 ranks' copies on 2 cores ran beside
 * the hand-offs as though on 4, and the model priced an 8-rank 32 KiB all-reduce by recursive
 * doubling (24 folds of 32 KiB) below the tree (7), which ran 1.1-1.5x faster in four regret grids.
 */
function coreShareRates(capacities: Float64Array, copyPaths: readonly Int32Array[], cores: number | undefined): (path: Int32Array) => number {
  const copiers = new Int32Array(capacities.length);
  for (const path of copyPaths) for (const link of path) copiers[link]++;
  return (path) => {
    let rate = Infinity;
    for (const link of path) rate = Math.min(rate, capacities[link] / Math.max(1, Math.min(cores ?? Infinity, copiers[link])));
    return rate;
  };
}

/** Rank devices on a host with more ranks than cores for them. */
function crowdedRanks(rankDevices: readonly number[], hosts: readonly number[], cores: number | undefined): Set<number> {
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
function transferRoute(graph: TopologyGraph, from: number, to: number, pull: boolean): Int32Array {
  const route = graph.route(from, to);
  return pull ? route.filter((link) => graph.link(link).from !== from) : route;
}

/** Bytes per microsecond at which a rank that pulls copies data its sender wrote in the same call (protocol.freshReadGBps); undefined where that costs nothing extra. */
function freshReadRateOf(protocol: Protocol): number | undefined {
  return protocol.pull === true && protocol.freshReadGBps !== undefined ? protocol.freshReadGBps * 1000 : undefined;
}

/** What a byte of fresh data weighs on a reader's copy path: its copy speed over the fresh-read rate, at least 1 (1 without a fresh-read rate). */
function freshReadWeight(device: Device, scale: number, freshReadRate: number | undefined): number {
  return freshReadRate === undefined ? 1 : Math.max(1, copyRate(device, scale) / freshReadRate);
}

/** Bytes per microsecond a device copies, counting the bytes written (a core's own measure; a GPU's memory bandwidth). */
function copyRate(device: Device, scale: number): number {
  return (device.memoryGBps ?? device.reduceGBps ?? 1000) * 1000 * scale;
}

/**
 * Microseconds a rank's local step of `bytes` written from `reads` sources takes by itself. A
 * GPU's memory bandwidth counts every byte read and written. A CPU core's speeds are measured
 * as bytes written: it copies at its memoryGBps, and its reduction kernel folds two sources
 * into the destination per pass at its reduceGBps.
 */
function localUs(device: Device, bytes: number, reads: number, rates: CallRates, index: number): number {
  const scale = rates.deviceScale[index];
  if (device.kind !== 'core') return ((reads + 1) * bytes) / ((device.memoryGBps ?? 1000) * 1000 * scale);
  if (reads > 1 && device.reduceGBps !== undefined) return ((reads - 1) * bytes) / (device.reduceGBps * 1000 * rates.reduceScale[index]);
  return bytes / copyRate(device, scale);
}

/** The switch that can reduce in the fabric, if every rank hangs off the same one. */
export function reducingSwitch(graph: TopologyGraph, rankDevices: readonly number[]): number | undefined {
  let found: number | undefined;
  for (const device of rankDevices) {
    const candidates = graph.linksFrom(device).filter((l) => graph.devices[l.to].kind === 'switch'
      && SWITCH_KINDS[graph.devices[l.to].switchKind!].inSwitchReduction).map((l) => l.to);
    if (candidates.length === 0 || (found !== undefined && !candidates.includes(found))) return undefined;
    found ??= candidates[0];
  }
  return found;
}

/**
 * In-switch reduction (NVLink SHARP, "NVLS"): each GPU owns 1/n of the result; the switch reads
 * and sums that part from every GPU and returns it, then the owner stores it once to a
 * multicast address and the switch writes it to every GPU. Per GPU and direction that is
 * (1 + 1/n) of the data, against 2(n-1)/n for a ring, at the switch's reduction efficiency.
 * Both directions stream concurrently (the library pipelines the two phases), so the call
 * takes one drain of that volume, the pipeline's fill (nvls-pipeline.ts) and two traversals.
 * There is no per-step synchronisation to charge: the chunks stream through the pipeline.
 */
function simulateNvls(graph: TopologyGraph, rankDevices: readonly number[], call: SimCall): SimOutcome {
  const sw = reducingSwitch(graph, rankDevices);
  if (sw === undefined || call.collective !== 'allReduce') {
    throw new Error('nvls needs an all-reduce on ranks that all attach to one NVLink SHARP switch');
  }
  const n = rankDevices.length;
  const protocol = protocolOf(graph.topology, call.protocol);
  const switchKind = SWITCH_KINDS[graph.devices[sw].switchKind!];
  const efficiency = protocol.efficiency * switchKind.reductionEfficiency;
  const queue = new EventQueue();
  let lastDrain = 0;
  const network = new FlowNetwork(queue, graph.capacities, () => { lastDrain = Math.max(lastDrain, queue.now); });
  const bytes = call.count * call.elementBytes * (1 + 1 / n) / efficiency;
  let stepLatency = 0;
  let portRate = Infinity;
  for (const device of rankDevices) {
    for (const path of [graph.route(device, sw), graph.route(sw, device)]) {
      stepLatency = Math.max(stepLatency, graph.routeLatency(path) + graph.deviceLatency(sw));
      for (const link of path) portRate = Math.min(portRate, graph.capacities[link]);
      network.start(path, bytes, undefined);
    }
  }
  queue.run();
  const fill = nvlsFillUs(call.count * call.elementBytes, n, switchKind, portRate * efficiency);
  const drain = Math.max(lastDrain, nvlsSaturatedUs(call.count * call.elementBytes, n, portRate * efficiency));
  const timeUs = protocol.baseUs + fill + drain + 2 * stepLatency;
  return { timeUs, rankCallUs: timeUs, channels: 1, linkBytes: network.carried, capacities: network.capacity };
}

/**
 * The executor's one-shot path on CPU ranks (exec/one-shot.ts): every rank copies its message
 * into its own slot (thread ranks) or a frame to each peer (TCP), then reads what it needs from
 * its peers' messages, all at once (the reads share the machine's memory paths as flows),
 * waiting once, for the last peer to publish. A reduction folds the peers' messages while it
 * reads them.
 */
function simulateOneShot(graph: TopologyGraph, rankDevices: readonly number[], call: SimCall): SimOutcome {
  const n = rankDevices.length;
  const protocol = protocolOf(graph.topology, call.protocol);
  const shape: CallShape = { collective: call.collective, nranks: n, count: call.count, root: call.root, inPlace: false, chunkCount: 0 };
  const rates = callRates(graph, rankDevices, shape, call.elementBytes);
  // The path's own measured costs where the protocol has them (the local profile's).
  const efficiency = protocol.oneShotEfficiency ?? protocol.efficiency;
  const messageBytes = oneShotCount(shape) * call.elementBytes;
  // Where a message costs CPU at each end (TCP: a frame to each peer, one from each), a rank
  // spends n - 1 of those before its messages are all out, and n - 1 taking its peers' in.
  const messagesUs = (n - 1) * (protocol.overheadUs ?? 0);
  const pull = protocol.pull === true;
  // Thread ranks publish a message that large by reference (their buffers registered, as the
  // schedules' zero-copy reads assume): nothing is copied into a slot, and readers read the
  // publisher's input, which was not written in the call; each publisher then waits to see its
  // last reader release the call.
  const byReference = pull && messageBytes >= BY_REFERENCE_MIN_BYTES;
  // Where ranks read each other's slots (thread ranks), a slot's lines sit in the caches of the
  // peers that read it in the call before, and publishing into it takes them back first; and a
  // slot read was written in this call, so its lines come from the writer's cache (the
  // protocol's invalidationTiers and freshReadGBps, as the schedules pay them).
  const takeBackUsPerByte = byReference ? undefined : peerReadWriteCosts(graph, rankDevices, protocol, shape, call.elementBytes);
  const published = messagesUs + (takeBackUsPerByte === undefined ? 0 : Math.max(...rankDevices.map((d) =>
    messageBytes / efficiency / copyRate(graph.devices[d], rates.deviceScale[d]) + messageBytes * (takeBackUsPerByte.get(d) ?? 0))));
  const freshReadRate = byReference ? undefined : freshReadRateOf(protocol);
  const queue = new EventQueue();
  const pools = corePools(rankDevices, rankHosts(graph, rankDevices), protocol.rankCores);
  const drained = new Float64Array(n);
  const network = new FlowNetwork(queue, rates.capacities, (reader: number) => { drained[reader] = queue.now; });
  const reducing = REDUCING_COLLECTIVES.has(call.collective);
  const readBytes = rankDevices.map((device, reader) => {
    // Folding a pulled message reads the destination too, as on the schedule path (startPull).
    const traffic = (reducing && pull ? rates.foldTraffic[device] : 1) * freshReadWeight(graph.devices[device], rates.deviceScale[device], freshReadRate);
    let bytes = 0;
    for (const { peer, count } of oneShotReads(shape, reader)) {
      if (count === 0) continue;
      bytes += count * call.elementBytes;
      network.start(transferRoute(graph, rankDevices[peer], device, pull), count * call.elementBytes * traffic / efficiency, reader);
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
    const work = (protocol.wakeUs ?? 0) + messagesUs + (reducing && rate > 0 ? Math.max(0, readBytes[reader] / (rate * 1000) - drained[reader]) : 0);
    last = Math.max(last, pools.get(device)?.finish(drained[reader], work) ?? drained[reader] + work);
  }
  const releasedUs = byReference ? protocol.releaseUs ?? protocol.wakeUs ?? 0 : 0;
  const timeUs = (protocol.oneShotUs ?? protocol.baseUs) + published + last + releasedUs;
  return { timeUs, rankCallUs: timeUs, channels: 1, linkBytes: network.carried, capacities: network.capacity };
}
