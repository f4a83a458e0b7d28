import { type Server, type Socket, connect, createServer } from 'node:net';
import { crc32 } from '../../kernels/crc32.js';
import { ErrorCode, type ErrorCodeValue, TscclError, errorCodeOfWireNumber, errorWireNumber, internalError } from '../../errors.js';
import { log } from '../../log.js';
import { NO_TOKEN_MAC, checkProof, isLoopbackAddress, newNonce, proveToken } from '../../security/job-token.js';
import type { Store } from '../../store/store.js';
import { hostKey, machineOf } from '../../topology/host-key.js';
import { type Consume, type MessageTag, type SendHandle, type Transport, type WaitContext, messageMismatch } from '../transport.js';
import { CONTROL_CHANNEL } from '../channels.js';
import { coreYield } from '../sched-yield.js';
import { rankSpin } from '../wait.js';
import { FLAG_CHECKSUM, FLAG_STRIPE, type Frame, type FrameHeader, FrameParser, type FrameSink, bufferingSink, encodeFrame, encodeHeader, frameError } from './frame.js';
import { Intake, intakeOf, readExactly, readInto, readNow } from './intake.js';
import { LOW_LATENCY_PREFIX_BYTES, TCP_ONE_SHOT_BYTES, TcpLowLatencySlots } from './tcp-low-latency.js';

export interface TcpTransportOptions {
  readonly rank: number;
  readonly nranks: number;
  /** Rendezvous: each rank publishes its address here and reads its peers'. */
  readonly store: Store;
  /** Distinguishes communicators (and jobs) that share a store. */
  readonly commName: string;
  /** Address to listen on (an address of the chosen interface). */
  readonly host: string;
  readonly token?: string;
  /** Accept peers without a token from non-loopback addresses. */
  readonly allowInsecureRemote?: boolean;
  /** CRC32 every payload (true) or none (false); default: only to peers on other machines (see checksumsFrame). */
  readonly checksum?: boolean;
  readonly timeoutMs: number;
  readonly maxPayloadBytes?: number;
  /** Sockets per pair of ranks; messages of STRIPE_MIN_BYTES or more are striped across them. */
  readonly socketsPerPeer?: number;
  /** A peer silent this long counts as lost (a host gone without closing its connections). */
  readonly heartbeatTimeoutMs?: number;
  /**
   * Memory for the read and realignment buffers (default: Node buffers). Give arena memory, and a
   * reduction reads each received piece in place with the SIMD kernels instead of staging it.
   */
  readonly readMemory?: (bytes: number) => Uint8Array;
  /** How long a frame may wait in its socket while this rank waits for one of its own sends (default HOLD_WHILE_SENDING_MS). */
  readonly holdWhileSendingMs?: number;
}

/** Below this, one socket carries the whole message; above, its K parts travel side by side. */
export const STRIPE_MIN_BYTES = 512 * 1024;

/**
 * What one read may take from a socket. A raw loopback exchange of 8 MB each way took 4.5 ms
 * with 64 KiB reads, 3.4 ms with 256 KiB and no better above (bench/bounds/tcp-exchange.mjs).
 * One buffer serves every socket of a transport: each read is handled before the next begins.
 */
const READ_BUFFER_BYTES = 256 * 1024;

const HANDSHAKE_MAGIC = 'TSCH';
const GREETING_BYTES = 22;
const HELLO_BYTES = 48;
const PURPOSE = 'tsccl-transport';

/** A socket and where its bytes go. */
interface Connection {
  readonly socket: Socket;
  readonly intake: Intake;
}

interface Link {
  readonly peer: number;
  /** The sockets this rank writes to the peer on (none to oneself); socket 0 carries every unstriped frame. */
  readonly lanes: readonly Socket[];
  /** The sockets this rank reads the peer's frames from, lane by lane. */
  readonly inbound: readonly Connection[];
  readonly inbox: Map<number, Frame[]>;
  /** Waits to end when anything happens on the link (an array: a Set's growing and shrinking cost more per call). */
  readonly wakers: (() => void)[];
  posted: number;
  written: number;
  error: TscclError | undefined;
  /** Highest collective seq received from this peer. */
  lastSeq: number;
  /**
   * Set when the peer announced it gave up on the communicator (origin: whose failure started it;
   * ended: the last collective it had ended successfully before).
   */
  failure: { code: ErrorCodeValue; seq: number; origin: number; ended: number } | undefined;
  /** The peer closed on purpose (destroyed its communicator): not a failure unless its data is still needed. */
  goodbye: boolean;
  /** When any byte last arrived from the peer (performance.now()). */
  lastHeard: number;
  /** By channel, a recv waiting while its inbox is empty: the next frame streams straight into it. */
  readonly waiting: (WaitingRecv | undefined)[];
  /** Send tickets whose writes finished out of order (striped sends complete lane by lane). */
  readonly finishedTickets: Set<number>;
  /** Per channel, messages seen on socket 0 still waiting for their other stripes, in order. */
  readonly ordered: Map<number, Slot[]>;
  /** Per channel, how many stripe parts each socket has carried: part j of a socket is message j's. */
  readonly stripeCounts: Map<number, number[]>;
  /** Per channel, striped messages being assembled, by their stripe number. */
  readonly assemblies: Map<number, Map<number, Assembly>>;
  /** Sockets holding a frame back until its receiver is posted: each resumes (or gives up waiting) when called. */
  readonly held: Set<(giveUp: boolean) => void>;
  /** The peer runs on this rank's machine (same kernel boot), whatever its network namespace. */
  readonly sameMachine: boolean;
}

/**
 * One transport's receive memory. `read`: every inbound socket reads into it (READ_BUFFER_BYTES),
 * unless a receiver has a place for the bytes. `align`: where a received piece at an address its
 * element type cannot be viewed at is copied.
 */
export interface ReceiveBuffers {
  readonly read: Uint8Array;
  readonly align: Uint8Array;
}

interface Slot {
  frame: Frame | undefined;
}

interface Assembly {
  readonly parts: (Buffer | undefined)[];
  header: FrameHeader | undefined;
  slot: Slot | undefined;
}

interface WaitingRecv {
  readonly bytes: number;
  readonly elementBytes: number;
  readonly tag: MessageTag;
  readonly consume: Consume;
  /** Set once the frame has fully arrived (or failed). */
  done: boolean;
  error: TscclError | undefined;
  /** Set when the receiver gave up; later bytes of its frame are dropped. */
  cancelled: boolean;
}

/** Frames on this channel carry failure announcements and goodbyes, not data. */
const GOODBYE = 0xffff;
/** "I am waiting in collective <seq>": sent when a wait runs long, so timeouts name the right ranks. */
const ENTERED = 0xfffe;
/** "Still here": sent every HEARTBEAT_MS, so a peer behind a dead network shows as lost. */
const HEARTBEAT = 0xfffd;
const HEARTBEAT_MS = 1000;

const LINGER_MS = 2000;
/**
 * How long a frame may wait in its socket for its receive (see listen). Ranks that receive from
 * several peers in turn post each receive when the one before is done: 4 process ranks, 2 runs
 * out of place and in place, all-reduce 16 MiB 52-72 ms with frames copied after one event-loop
 * turn, 45-55 ms after 10 ms, 41-45 ms after 50 ms; all-gather 25-32 / 20-25 / 19-21 ms. The
 * bound only matters when a receive comes late or never (frames of another channel or a
 * mismatched call wait behind the held one that long; then it is copied as before).
 */
const HOLD_MS = 50;
/**
 * How long a frame may wait in its socket while this rank waits for one of its own sends to be
 * taken. The peer may be holding those bytes back in turn, each rank waiting for the other, so
 * the wait is short; but not none. A receive into bytes a posted send still covers (an in-place
 * call) waits for that send's write callback, which Node runs an event-loop turn after the bytes
 * left, and the peer's answer often comes in that turn: copied at once, it cost a new buffer and a
 * second copy (2 processes, in-place all-reduce, 128 MiB: 9-17 frames of 4 MiB per 10 calls).
 * Node's timers count whole milliseconds, so 1 is the shortest.
 */
const HOLD_WHILE_SENDING_MS = 1;
/**
 * Frames smaller than this are buffered at once, never held: copying a few KiB costs less than
 * stopping and restarting the socket's reads and the timer of a hold (2 processes, 8 B
 * all-reduce: a peer's frame often comes before its receive is posted).
 */
const HOLD_MIN_BYTES = 64 * 1024;
const EMPTY = new Uint8Array(0);

/**
 * Fault injection for tests, never set in a real job: TSCCL_TEST_FAULT=<flip|cut>@<rank>#<n>
 * makes rank <rank>'s n-th data frame arrive with one bit flipped (after its checksum was taken),
 * or cuts that rank's connection halfway through the frame.
 */
const testFault = (() => {
  const m = /^(flip|cut)@(\d+)#(\d+)$/.exec(process.env.TSCCL_TEST_FAULT ?? '');
  return m === null ? undefined : { kind: m[1] as 'flip' | 'cut', rank: Number(m[2]), frame: Number(m[3]) };
})();
const liveTransports = new Set<TcpTransport>();
let exitHookInstalled = false;

/** Closes every TCP transport of this thread gracefully; a rank's runner calls it when the script ends. */
export async function closeLiveTransports(): Promise<void> {
  await Promise.all([...liveTransports].map((t) => t.close()));
}

/** FNV-1a: a stable 32-bit id of a communicator name, carried in every frame to catch cross-talk. */
export function commIdOf(name: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < name.length; i++) h = Math.imul(h ^ name.charCodeAt(i), 0x01000193);
  return h >>> 0;
}

/**
 * The largest message sent as one buffer with its header, copied: one write instead of a corked
 * writev of two buffers, which costs more JavaScript than copying a few KiB (2 processes, 8 B
 * all-reduce: the writev path was the largest item of a CPU profile after the system call).
 * The one-shot path's largest message and its prefix.
 */
const COPY_FRAME_MAX_BYTES = TCP_ONE_SHOT_BYTES + LOW_LATENCY_PREFIX_BYTES;

/**
 * After a frame of this size, the next frame's header is read on its own, so that its payload
 * can be read straight into a plain receive's memory. Read together with the header, the first
 * 256 KiB went into the read buffer and were copied from there, which was all of a 256 KiB frame:
 * 2 processes exchanging 256 KiB spent 9% of their CPU in V8's memmove, after the kernel's two
 * copies, and took 128-140 us an exchange against 111-114 us with the header read alone (three
 * alternating pairs). Any large frame counts, not only one read in place: a direct all-reduce
 * alternates a reduced frame (read into the read buffer, which the kernels reduce from) with a
 * plain one, and when only placed frames counted, the plain frame's first 256 KiB were copied on
 * every call (2 processes, 130 all-reduces of 8 MB: 28-32 MB copied per rank). Below this size
 * one read of header and payload costs less than a second system call.
 */
const HEADER_FIRST_MIN_BYTES = 64 * 1024;

/**
 * The largest message whose receive polls the event loop before it sleeps. A process asleep in
 * epoll is woken by the kernel when its bytes come, and on this VM that costs 40-50 us a message
 * when the wake crosses cores (bare Node ping-pong over loopback: 80-130 us a round trip between
 * two cores, 10-11 us with both ends polling). Larger messages stream for longer than that, and a
 * polling reader takes them in more, smaller reads: 2 processes, all-reduce of 512 KiB and 4 MiB
 * took 1.2-1.8x longer when every receive polled.
 */
const POLL_MAX_BYTES = 64 * 1024;

/**
 * How long a one-shot receive reads its peer's socket in place (readNow) before it polls the
 * event loop. A turn of the loop, its promise and the call's way back cost more than a read:
 * 2 processes, 8 B all-reduce, 12.4-13.4 us a call polling the loop, 10.6-10.7 with this spin
 * (10.8-11.6 with 10 us, 10.1-11.5 with 100). A read that finds nothing costs 3.2 us (Node
 * throws EAGAIN), one that finds bytes 0.7, so the spin tries a few times and no more.
 */
const SPIN_READ_MS = 0.03;

/**
 * How often a polling receive asks its context whether to end (deadline, abort, a failed
 * peer): asked on every turn of the event loop, that check was much of a turn's JavaScript.
 */
const POLL_CHECK_MS = 0.1;

/**
 * How long a receive of `bytes` polls before it sleeps, in ms, given the transport's spin budget
 * (rankSpin of the ranks on its machine, which share its cores in whatever namespace).
 */
export function receivePollMs(bytes: number, budgetMs: number): number {
  return bytes <= POLL_MAX_BYTES ? budgetMs : 0;
}

/**
 * Ranks in different processes or hosts. Two sockets per pair of ranks and lane, one each way:
 * every rank dials every peer, proves the job token, and reads that peer's frames from the
 * socket it dialed (only a dialed socket can read into a given buffer, see Intake); it writes to
 * the peer on the socket the peer dialed. The listener closes once every expected peer is in,
 * so nobody else can join. A send writes header and payload straight from the caller's memory
 * and counts as delivered when the socket has taken it, after which the buffer may be reused; a
 * message of up to COPY_FRAME_MAX_BYTES is copied into its frame, so it is delivered at once.
 * Received frames stream into a waiting recv, or wait in a per-(peer, channel) inbox for it.
 */
export class TcpTransport implements Transport {
  readonly rank: number;
  readonly nranks: number;
  private readonly links: Link[];
  /** Each rank's host key, learnt at rendezvous: which peers share a machine. */
  readonly hostKeys: readonly string[];
  /** The id every frame of this communicator carries (FNV-1a of its name). */
  readonly commId: number;
  private readonly checksum: boolean | undefined;
  private closing = false;
  private closed: Promise<void> | undefined;
  private framesSent = 0;
  /** Sends being waited for: while there are any, arriving frames are held back only briefly (see listen). */
  private deliveryWaits = 0;
  private heartbeatTimer: NodeJS.Timeout | undefined;
  private heartbeatTimeoutMs = Infinity;
  /** The memory inbound sockets read into, and where misaligned pieces are copied (ReceiveBuffers). */
  private readonly buffers: ReceiveBuffers;
  /** Ranks of this communicator on this rank's machine, whatever their network namespace: they share its cores. */
  readonly machineRanks: number;
  /** How long a small receive polls before it sleeps (rankSpin of machineRanks, read once). */
  private readonly pollBudgetMs: number;
  private readonly holdWhileSendingMs: number;
  /** sched_yield on every turn of a poll, when the ranks on this machine outnumber its cores (rankSpin). */
  private readonly pollYield: (() => number) | undefined;
  /** The one-shot path's messages: one copied frame to each peer per call. */
  readonly lowLatency: TcpLowLatencySlots;
  readonly concurrentRecvs = true;
  /** The last collectives this rank entered and ended successfully (kept by its status board, told to the peers on exit). */
  readonly progress = { entered: 0, ended: 0 };

  private constructor(rank: number, nranks: number, links: Link[], commId: number, checksum: boolean | undefined, hostKeys: string[], buffers: ReceiveBuffers,
    holdWhileSendingMs: number) {
    this.rank = rank;
    this.holdWhileSendingMs = holdWhileSendingMs;
    this.buffers = buffers;
    this.nranks = nranks;
    this.links = links;
    this.hostKeys = hostKeys;
    this.machineRanks = links.filter((link) => link.sameMachine).length;
    const spin = rankSpin(this.machineRanks);
    this.pollBudgetMs = spin.spinMs;
    this.pollYield = spin.spinYields ? coreYield() : undefined;
    this.commId = commId;
    this.checksum = checksum;
    this.lowLatency = new TcpLowLatencySlots(this);
  }

  static async create(options: TcpTransportOptions): Promise<TcpTransport> {
    const { rank, nranks, store, commName, host } = options;
    const commId = commIdOf(commName);
    const outbound = new Map<number, Connection[]>();
    const inbound = new Map<number, Connection[]>();
    const readMemory = options.readMemory ?? ((bytes: number) => Buffer.allocUnsafeSlow(bytes));
    const readBuffer = readMemory(READ_BUFFER_BYTES);
    const server = createServer();
    const accepted = acceptPeers(server, options, commId, outbound);
    await new Promise<void>((resolve, reject) => { server.once('error', reject); server.listen(0, host, () => resolve()); });
    const port = (server.address() as { port: number }).port;
    const myKey = hostKey();
    await store.set(`tcp/${commName}/${rank}`, Buffer.from(JSON.stringify({ host, port, hostKey: myKey })), { timeoutMs: options.timeoutMs });
    const peers = Array.from({ length: nranks }, (_, peer) => peer);
    let hostKeys: string[];
    let failed = false;
    // On failure no socket may stay open: one left behind keeps the process alive after its work.
    const dropAll = () => { for (const lanes of [...outbound.values(), ...inbound.values()]) for (const c of lanes) c?.socket.destroy(); };
    try {
      [, hostKeys] = await Promise.all([
        accepted,
        Promise.all(peers.map(async (peer) => {
          if (peer === rank) return myKey;
          const where = JSON.parse(Buffer.from(await store.get(`tcp/${commName}/${peer}`, { timeoutMs: options.timeoutMs })).toString()) as { host: string; port: number; hostKey: string };
          const lanes = options.socketsPerPeer ?? 1;
          inbound.set(peer, await Promise.all(Array.from({ length: lanes }, (_, lane) => dialPeer(where.host, where.port, options, commId, peer, lane, readBuffer))));
          if (failed) dropAll(); // a dial that completed after the rendezvous had already failed
          return where.hostKey;
        })),
      ]);
    } catch (err) {
      failed = true;
      dropAll();
      throw err;
    } finally {
      server.close();
    }
    const machine = machineOf(myKey);
    const links: Link[] = Array.from({ length: nranks }, (_, peer) => ({
      peer, lanes: peer === rank ? [] : outbound.get(peer)!.map((c) => c.socket), inbound: peer === rank ? [] : inbound.get(peer)!, inbox: new Map(), wakers: [], posted: 0, written: 0, error: undefined,
      lastSeq: 0, failure: undefined, goodbye: false, lastHeard: performance.now(), waiting: [], finishedTickets: new Set(), ordered: new Map(), stripeCounts: new Map(), assemblies: new Map(), held: new Set(),
      sameMachine: machineOf(hostKeys[peer]) === machine,
    }));
    const transport = new TcpTransport(rank, nranks, links, commId, options.checksum, hostKeys, { read: readBuffer, align: readMemory(READ_BUFFER_BYTES) },
      options.holdWhileSendingMs ?? HOLD_WHILE_SENDING_MS);
    for (const link of links) {
      link.inbound.forEach((c, lane) => transport.listen(link, c, lane, options.maxPayloadBytes ?? 2 ** 34));
      for (const c of outbound.get(link.peer) ?? []) transport.listenOutbound(link, c);
    }
    liveTransports.add(transport);
    transport.startHeartbeat(options.heartbeatTimeoutMs ?? Infinity);
    if (!exitHookInstalled) {
      exitHookInstalled = true;
      // A script that ends without destroying its communicators still leaves politely.
      process.once('beforeExit', () => { void closeLiveTransports(); });
      // One that calls process.exit (or throws) leaves at once: say how far it got, so that peers
      // still in a call it had ended finish it, and only later calls fail. Sockets with nothing
      // queued write synchronously, so the frame is out before the process is gone.
      process.once('exit', () => { for (const t of liveTransports) t.announceExit(); });
    }
    return transport;
  }

  async send(peer: number, channel: number, data: Uint8Array, tag: MessageTag, _ctx: WaitContext): Promise<SendHandle> {
    return this.trySend(peer, channel, data, tag);
  }

  /** A socket takes any send at once (it buffers what the kernel cannot take yet), so this never refuses. */
  trySend(peer: number, channel: number, data: Uint8Array, tag: MessageTag): SendHandle {
    const link = this.links[peer];
    if (link.error !== undefined) throw link.error;
    const ticket = ++link.posted;
    if (link.lanes.length === 0) {
      const sink = this.open(link, this.header(channel, tag, data, 0, 0))!;
      sink.payload(data);
      sink.end();
      this.finish(link, ticket);
      return { peer, channel, ticket };
    }
    const sum = checksumsFrame(tag.checksum ?? this.checksum, link.sameMachine);
    if (testFault !== undefined && testFault.rank === this.rank && ++this.framesSent === testFault.frame && data.byteLength > 1) {
      return this.sendFaulty(link, channel, data, tag, ticket, testFault.kind, sum);
    }
    if (data.byteLength <= COPY_FRAME_MAX_BYTES) {
      // The frame is a copy, so the caller's memory is free at once: no wait for the write.
      link.lanes[0].write(encodeFrame(this.header(channel, tag, data, sum ? crc32(data) : 0, sum ? FLAG_CHECKSUM : 0), data));
      this.finish(link, ticket);
      return { peer, channel, ticket };
    }
    const parts = link.lanes.length > 1 && data.byteLength >= STRIPE_MIN_BYTES ? stripes(data.byteLength, link.lanes.length) : [[0, data.byteLength]];
    let unfinished = parts.length;
    const written = (err: Error | null | undefined) => { if (!err && --unfinished === 0) this.finish(link, ticket); this.wake(link); };
    parts.forEach(([start, end], lane) => {
      const part = data.subarray(start, end);
      const socket = link.lanes[lane];
      socket.cork();
      socket.write(encodeHeader(this.header(channel, tag, part, sum ? crc32(part) : 0, (parts.length > 1 ? FLAG_STRIPE : 0) | (sum ? FLAG_CHECKSUM : 0))));
      socket.write(part, written);
      socket.uncork();
    });
    return { peer, channel, ticket };
  }

  private sendFaulty(link: Link, channel: number, data: Uint8Array, tag: MessageTag, ticket: number, kind: 'flip' | 'cut', sum: boolean): SendHandle {
    const socket = link.lanes[0];
    const header = encodeHeader(this.header(channel, tag, data, sum ? crc32(data) : 0, sum ? FLAG_CHECKSUM : 0));
    const corrupt = Uint8Array.from(data);
    corrupt[0] ^= 1;
    socket.write(header);
    if (kind === 'flip') socket.write(corrupt, () => { this.finish(link, ticket); this.wake(link); });
    else socket.write(corrupt.subarray(0, corrupt.byteLength >> 1), () => socket.destroy());
    return { peer: link.peer, channel, ticket };
  }

  /** Marks a send's bytes as taken by the sockets; tickets complete in order. */
  private finish(link: Link, ticket: number): void {
    if (ticket === link.written + 1 && link.finishedTickets.size === 0) {
      link.written = ticket;
      return;
    }
    link.finishedTickets.add(ticket);
    while (link.finishedTickets.has(link.written + 1)) link.finishedTickets.delete(++link.written);
  }

  /** Takes the channel's next message if it has arrived whole; false if not. */
  tryRecv(peer: number, channel: number, bytes: number, _elementBytes: number, tag: MessageTag, consume: Consume): boolean {
    const frame = this.takeMessage(peer, channel);
    if (frame === undefined) return false;
    this.checkMatch(this.links[peer], frame.header, bytes, tag);
    if (bytes > 0) consume(frame.payload, 0);
    return true;
  }

  /** The next whole message on a channel from a peer, taken out of its inbox without a check (the one-shot path checks its own). */
  takeMessage(peer: number, channel: number): Frame | undefined {
    return this.links[peer].inbox.get(channel)?.shift();
  }

  hasMessage(peer: number, channel: number): boolean {
    return (this.links[peer].inbox.get(channel)?.length ?? 0) > 0;
  }

  /**
   * Reads the peer's socket without turning the event loop until a message waits on `channel`,
   * for up to SPIN_READ_MS; whether one does. Not while this rank still has bytes queued for
   * the peer (it may be waiting for them, and only the event loop sends them), nor where the
   * ranks outnumber the cores: the reads that find nothing take CPU the peer needs (4 processes,
   * 2 cores, all-gather of 256 B-16 KiB: 1.1-1.2x slower with the spin).
   */
  spinForMessage(peer: number, channel: number): boolean {
    const link = this.links[peer];
    const connection = link.inbound[0];
    if (connection === undefined || this.pollYield !== undefined || link.lanes.some((socket) => socket.writableLength > 0)) return this.hasMessage(peer, channel);
    const until = performance.now() + SPIN_READ_MS;
    do {
      const read = readNow(connection.socket, this.buffers.read, connection.intake);
      if (read === undefined) break;
      if (read > 0 && this.hasMessage(peer, channel)) return true;
    } while (performance.now() < until && link.error === undefined);
    return this.hasMessage(peer, channel);
  }

  /** Waits until a message from `peer` is in on `channel`; a message of up to `bytes` polls as a receive of that size does. */
  async waitForMessage(peer: number, channel: number, bytes: number, ctx: WaitContext): Promise<void> {
    await this.waitFor(this.links[peer], () => this.hasMessage(peer, channel), ctx, receivePollMs(bytes, this.pollBudgetMs));
  }

  async recv(peer: number, channel: number, bytes: number, elementBytes: number, tag: MessageTag, consume: Consume, ctx: WaitContext): Promise<void> {
    if (this.tryRecv(peer, channel, bytes, elementBytes, tag, consume)) return;
    const link = this.links[peer];
    // Nothing queued: wait for the next frame of this channel to stream straight into `consume`.
    const receiver: WaitingRecv = { bytes, elementBytes, tag, consume, done: false, error: undefined, cancelled: false };
    link.waiting[channel] = receiver;
    if (link.held.size > 0) for (const resume of [...link.held]) resume(false);
    try {
      await this.waitFor(link, () => receiver.done, ctx, receivePollMs(bytes, this.pollBudgetMs));
    } catch (err) {
      receiver.cancelled = true;
      throw err;
    } finally {
      if (link.waiting[channel] === receiver) link.waiting[channel] = undefined;
    }
    if (receiver.error !== undefined) throw receiver.error;
  }

  private checkMatch(link: Link, h: FrameHeader, bytes: number, tag: MessageTag): void {
    if (h.length !== bytes || h.seq !== tag.seq || h.opcode !== tag.opcode || h.commId !== this.commId) {
      throw messageMismatch(this.rank, link.peer, { opcode: tag.opcode, seq: tag.seq, bytes }, { opcode: h.opcode, seq: h.seq, bytes: h.length },
        h.commId !== this.commId ? ' on another communicator' : '');
    }
  }

  /**
   * Where an arriving frame's payload goes: the receiver waiting for it, else the inbox; or, if
   * `patient`, nowhere yet (undefined): the frame waits in the socket for its receiver.
   */
  private open(link: Link, header: FrameHeader, lane = 0, patient = false): FrameSink | undefined {
    if (header.channel === CONTROL_CHANNEL) return bufferingSink(header, (frame) => this.control(link, frame));
    if (lane > 0 || header.flags & FLAG_STRIPE) return this.openStripe(link, header, lane);
    if (header.channel === 0 && ((header.seq - link.lastSeq) | 0) > 0) link.lastSeq = header.seq;
    const ordered = link.ordered.get(header.channel);
    if (ordered !== undefined && ordered.length > 0) {
      // A striped message before this one is still assembling: keep the order.
      const slot: Slot = { frame: undefined };
      ordered.push(slot);
      return bufferingSink(header, (frame) => { slot.frame = frame; this.flush(link, header.channel); });
    }
    const receiver = link.waiting[header.channel];
    if (receiver === undefined) return patient && header.length >= HOLD_MIN_BYTES ? undefined : bufferingSink(header, (frame) => this.deliver(link, frame));
    link.waiting[header.channel] = undefined;
    try {
      this.checkMatch(link, header, receiver.bytes, receiver.tag);
    } catch (err) {
      receiver.error = err as TscclError;
      receiver.done = true;
      this.wake(link);
      return { payload: () => {}, end: () => {} };
    }
    return streamingSink(receiver, this.buffers, () => { receiver.done = true; this.wake(link); });
  }

  isDelivered(handle: SendHandle): boolean {
    return this.links[handle.peer].written >= handle.ticket;
  }

  async waitDelivered(handle: SendHandle, ctx: WaitContext): Promise<void> {
    const link = this.links[handle.peer];
    if (link.written >= handle.ticket) return;
    // The peer may be holding back this rank's bytes until it posts their receive, and it may
    // itself wait for this rank to take its sends first: while any send waits, a frame is held
    // only briefly (holdWhileSendingMs), and those held before give up now.
    this.deliveryWaits++;
    for (const other of this.links) if (other.held.size > 0) for (const resume of [...other.held]) resume(true);
    try {
      await this.waitFor(link, () => link.written >= handle.ticket, ctx);
    } finally {
      this.deliveryWaits--;
    }
  }

  private startHeartbeat(timeoutMs: number): void {
    this.heartbeatTimeoutMs = timeoutMs;
    if (!Number.isFinite(timeoutMs) || this.links.every((l) => l.lanes.length === 0)) return;
    this.heartbeatTimer = setInterval(() => this.controlToAll(HEARTBEAT, 0), Math.min(HEARTBEAT_MS, timeoutMs / 3));
    this.heartbeatTimer.unref();
  }

  /** Peers whose connection broke (or fell silent) without a goodbye: dead, as far as this rank can tell. */
  lostPeers(): number[] {
    this.checkHeartbeats();
    return this.links.filter((l) => l.error?.code === ErrorCode.PEER_LOST && !l.goodbye).map((l) => l.peer);
  }

  /** A peer silent past the heartbeat timeout counts as lost from now on. */
  private checkHeartbeats(): void {
    const now = performance.now();
    for (const link of this.links) {
      if (link.lanes.length > 0 && !link.goodbye && link.error === undefined && now - link.lastHeard > this.heartbeatTimeoutMs) {
        link.error = new TscclError(ErrorCode.PEER_LOST,
          `Rank ${this.rank} has heard nothing from rank ${link.peer} for ${Math.round(now - link.lastHeard)} ms (heartbeat timeout ${this.heartbeatTimeoutMs} ms): its host is unreachable or it hangs`,
          { rank: this.rank, peer: link.peer });
        this.wake(link);
      }
    }
  }

  /** Ends every wait on every link now, so each re-checks its context (an abort). */
  wakeAll(): void {
    for (const link of this.links) this.wake(link);
  }

  /** Highest collective seq heard from a peer (this rank's own is tracked by the caller). */
  lastSeqFrom(peer: number): number {
    return this.links[peer].lastSeq;
  }

  /** Tells every peer this rank gave up on the communicator, so their waits end now. */
  announceFailure(code: ErrorCodeValue, seq: number, origin: number, ended: number): void {
    const payload = Buffer.alloc(8);
    payload.writeUInt32LE(origin);
    payload.writeInt32LE(ended, 4);
    this.controlToAll(errorWireNumber(code), seq, payload);
  }

  /** Tells every peer this rank's process is exiting, after the collectives it ended. */
  announceExit(): void {
    this.announceFailure(ErrorCode.PEER_LOST, this.progress.entered, this.rank, this.progress.ended);
  }

  /** Tells every peer this rank is waiting in collective `seq`. */
  announceSeq(seq: number): void {
    this.controlToAll(ENTERED, seq);
  }

  private controlToAll(opcode: number, seq: number, payload = Buffer.alloc(0)): void {
    for (const link of this.links) {
      const socket = link.lanes[0];
      if (socket === undefined || link.error !== undefined || socket.destroyed) continue;
      socket.write(Buffer.concat([encodeHeader({ flags: 0, channel: CONTROL_CHANNEL, commId: this.commId, seq, opcode, length: payload.byteLength, checksum: 0 }), payload]));
    }
  }

  /**
   * The first of `peers` that announced a failure before ending collective `seq` (at any time for
   * seq undefined), whose connection broke, or that fell silent.
   */
  failedBefore(peers: readonly number[], seq: number | undefined): { rank: number; code: ErrorCodeValue; seq: number } | undefined {
    this.checkHeartbeats();
    for (const peer of peers) {
      const link = this.links[peer];
      const failure = link.failure;
      if (failure !== undefined && (seq === undefined || ((failure.ended - seq) | 0) < 0)) return { rank: failure.origin, code: failure.code, seq: failure.seq };
      // A broken connection fails the call at once, unless the peer said first how far it got.
      if (failure === undefined && link.error?.code === ErrorCode.PEER_LOST && !link.goodbye) return { rank: link.peer, code: ErrorCode.PEER_LOST, seq: link.lastSeq };
    }
    return undefined;
  }

  /**
   * Says goodbye to every peer and half-closes, then keeps reading until each peer has closed
   * too (at most LINGER_MS): closing with unread bytes would make the kernel reset the
   * connection and could destroy data still on its way to a peer.
   */
  close(): Promise<void> {
    if (this.closed === undefined) {
      this.closing = true;
      clearInterval(this.heartbeatTimer);
      liveTransports.delete(this);
      // Goodbye and end on the sockets this rank writes; its inbound ones close when each peer ends its side.
      const outbound = new Set(this.links.flatMap((l) => l.lanes));
      const sockets = this.links.flatMap((l) => [...l.lanes, ...l.inbound.map((c) => c.socket)]).filter((socket) => !socket.destroyed);
      this.closed = Promise.all(sockets.map((socket) => new Promise<void>((resolve) => {
        const timer = setTimeout(() => { socket.destroy(); }, LINGER_MS);
        socket.once('close', () => { clearTimeout(timer); resolve(); });
        if (outbound.has(socket)) socket.end(encodeHeader({ flags: 0, channel: CONTROL_CHANNEL, commId: this.commId, seq: 0, opcode: GOODBYE, length: 0, checksum: 0 }));
      }))).then(() => undefined);
    }
    return this.closed;
  }

  private header(channel: number, tag: MessageTag, data: Uint8Array, checksum: number, extraFlags: number) {
    return { flags: extraFlags, channel, commId: this.commId, seq: tag.seq, opcode: tag.opcode, length: data.byteLength, checksum };
  }

  /**
   * Reads a peer's frames from one socket. The rest of a frame that was read in part is read on
   * its own, not together with the frames behind it: a plain receive reads it straight into its
   * destination, and the frame's end is the end of a read, so the receive of the next frame can
   * be posted before that frame is read (Node runs the microtasks between two reads).
   *
   * A data frame of HOLD_MIN_BYTES or more whose receiver is not posted yet is held back: the
   * socket stops reading (the rest of the frame stays in the kernel, so the sender's later bytes
   * wait there too, as a receiver's credits make them wait in NCCL) until a receive is posted on
   * the link, this rank starts to wait for one of its own sends to be taken (the peer may be
   * holding that back too), or HOLD_MS pass (HOLD_WHILE_SENDING_MS for a frame that came during
   * such a wait); then it is buffered, as smaller frames are at once. A frame then
   * streams into its receiver instead of into a copy, whether it came just behind the previous
   * one or from a peer whose turn comes later.
   */
  private listen(link: Link, { socket, intake }: Connection, lane: number, maxPayloadBytes: number): void {
    const parser = new FrameParser(maxPayloadBytes, crc32);
    const take = (bytes: Uint8Array, patient = true) => {
      link.lastHeard = performance.now();
      let used: number;
      try {
        used = parser.push(bytes, (header) => this.open(link, header, lane, patient));
      } catch (err) {
        this.fail(link, socket, err);
        return;
      }
      if (parser.stalled) hold(bytes.subarray(used));
    };
    const hold = (rest: Uint8Array) => {
      intake.detach(rest);
      socket.pause();
      const resume = (giveUp: boolean) => {
        link.held.delete(resume);
        take(EMPTY, !giveUp);
        if (parser.stalled) return;
        intake.attach(take);
        if (!parser.stalled && !socket.destroyed) socket.resume();
      };
      link.held.add(resume);
      setTimeout(() => { if (link.held.has(resume)) resume(true); }, this.deliveryWaits > 0 ? this.holdWhileSendingMs : HOLD_MS).unref();
    };
    intake.placement = () => {
      const frame = parser.current;
      if (frame === undefined || frame.left === 0) {
        const headerLeft = parser.headerLeft;
        return headerLeft > 0 && parser.previousBytes >= HEADER_FIRST_MIN_BYTES ? this.buffers.read.subarray(0, headerLeft) : undefined;
      }
      return frame.sink.place?.(frame.left) ?? this.buffers.read.subarray(0, Math.min(frame.left, this.buffers.read.byteLength));
    };
    intake.attach(take);
    this.watch(link, socket);
  }

  /** A socket this rank only writes on: the peer never sends on it, so bytes there are an error. */
  private listenOutbound(link: Link, { socket, intake }: Connection): void {
    intake.attach(() => this.fail(link, socket, frameError(`rank ${link.peer} sent data on a socket it should only read`)));
    this.watch(link, socket);
  }

  private fail(link: Link, socket: Socket, err: unknown): void {
    const base = internalError(err, 'receiving a frame', { peer: link.peer });
    this.lose(link, new TscclError(base.code, `Rank ${this.rank}, data from rank ${link.peer}: ${base.message}`, { ...base.details, rank: this.rank, peer: link.peer }));
    socket.destroy();
  }

  private watch(link: Link, socket: Socket): void {
    socket.on('error', () => {});
    socket.resume(); // the handshake left it paused
    // Waiting calls hold timers; an idle link must not keep the process alive after the script ends.
    socket.unref();
    socket.on('close', () => {
      if (this.closing) return;
      // A peer that destroyed its communicator ends each of its sockets after its last frame, and
      // the sockets' bytes do not keep step: while another one still reads, that socket may carry
      // parts of a message this rank waits for.
      if (link.goodbye && link.inbound.some((c) => !c.socket.destroyed)) return;
      const why = link.goodbye ? `rank ${link.peer} destroyed the communicator` : `Rank ${this.rank} lost its connection to rank ${link.peer}`;
      this.lose(link, new TscclError(ErrorCode.PEER_LOST, link.goodbye ? `Rank ${this.rank} needs data from rank ${link.peer}, but ${why}` : why, { rank: this.rank, peer: link.peer }));
    });
  }

  /**
   * One part of a striped message. Part j on socket i belongs to the channel's j-th striped
   * message; socket 0's part fixes the message's place in the channel's order.
   */
  private openStripe(link: Link, header: FrameHeader, lane: number): FrameSink {
    if (!(header.flags & FLAG_STRIPE)) throw new TscclError(ErrorCode.MISMATCH, `TCP frame error: an unstriped frame on socket ${lane} of rank ${link.peer}`, { peer: link.peer });
    const ch = header.channel;
    let counts = link.stripeCounts.get(ch);
    if (counts === undefined) link.stripeCounts.set(ch, (counts = new Array<number>(link.lanes.length).fill(0)));
    const number = counts[lane]++;
    let assemblies = link.assemblies.get(ch);
    if (assemblies === undefined) link.assemblies.set(ch, (assemblies = new Map()));
    let assembly = assemblies.get(number);
    if (assembly === undefined) assemblies.set(number, (assembly = { parts: new Array(link.lanes.length).fill(undefined), header: undefined, slot: undefined }));
    if (lane === 0) {
      if (ch === 0 && ((header.seq - link.lastSeq) | 0) > 0) link.lastSeq = header.seq;
      assembly.header = header;
      assembly.slot = { frame: undefined };
      let ordered = link.ordered.get(ch);
      if (ordered === undefined) link.ordered.set(ch, (ordered = []));
      ordered.push(assembly.slot);
    }
    const whole = assembly;
    return bufferingSink(header, (frame) => {
      whole.parts[lane] = frame.payload;
      if (whole.slot === undefined || whole.parts.some((p) => p === undefined)) return;
      assemblies.delete(number);
      const payload = Buffer.concat(whole.parts as Buffer[]);
      whole.slot.frame = { header: { ...whole.header!, flags: 0, length: payload.byteLength }, payload };
      this.flush(link, ch);
    });
  }

  /** Hands over, in order, the messages of a channel whose parts have all arrived. */
  private flush(link: Link, channel: number): void {
    const ordered = link.ordered.get(channel)!;
    while (ordered.length > 0 && ordered[0].frame !== undefined) this.deliver(link, ordered.shift()!.frame!);
  }

  private control(link: Link, { header, payload }: Frame): void {
    if (header.opcode === GOODBYE) { link.goodbye = true; return; }
    if (header.opcode === HEARTBEAT) return;
    if (header.opcode === ENTERED) {
      if (((header.seq - link.lastSeq) | 0) > 0) link.lastSeq = header.seq;
      return;
    }
    const origin = payload.byteLength >= 4 ? payload.readUInt32LE(0) : link.peer;
    const ended = payload.byteLength >= 8 ? payload.readInt32LE(4) : 0;
    link.failure ??= { code: errorCodeOfWireNumber(header.opcode), seq: header.seq, origin, ended };
    this.wake(link);
  }

  private deliver(link: Link, frame: Frame): void {
    // A receiver that started waiting while this frame was arriving takes it now.
    const receiver = link.waiting[frame.header.channel];
    if (receiver !== undefined && !this.hasMessage(link.peer, frame.header.channel)) {
      link.waiting[frame.header.channel] = undefined;
      try {
        this.checkMatch(link, frame.header, receiver.bytes, receiver.tag);
        if (receiver.bytes > 0 && !receiver.cancelled) receiver.consume(frame.payload, 0);
      } catch (err) {
        receiver.error = err as TscclError;
      }
      receiver.done = true;
      this.wake(link);
      return;
    }
    let queue = link.inbox.get(frame.header.channel);
    if (queue === undefined) link.inbox.set(frame.header.channel, (queue = []));
    queue.push(frame);
    this.wake(link);
  }

  private lose(link: Link, err: TscclError): void {
    link.error ??= err;
    // A peer that destroyed its communicator closes too; a call that needed it reports the error.
    log('INFO', () => err.message);
    this.wake(link);
  }

  private wake(link: Link): void {
    if (link.wakers.length > 0) for (const wake of link.wakers.slice()) wake();
  }

  /**
   * Waits for `ready` on a link, ending on the link's failure or the context's verdict. For
   * `pollMs` it first keeps the event loop turning (a pending setImmediate makes libuv poll the
   * sockets without blocking), so the process stays on its core instead of sleeping in epoll
   * until the kernel wakes it.
   */
  private async waitFor(link: Link, ready: () => boolean, ctx: WaitContext, pollMs = 0): Promise<void> {
    const pollUntil = pollMs > 0 ? performance.now() + pollMs : 0;
    let nextCheck = 0;
    while (!ready()) {
      if (link.error !== undefined) throw link.error;
      if (pollUntil > 0) {
        const now = performance.now();
        if (now < pollUntil) {
          if (now >= nextCheck) {
            ctx.check();
            nextCheck = now + POLL_CHECK_MS;
          }
          this.pollYield?.();
          await new Promise<void>((resolve) => { setImmediate(resolve); });
          continue;
        }
      }
      ctx.check();
      await new Promise<void>((resolve) => {
        const timer = setTimeout(done, ctx.sliceMs());
        function done() {
          clearTimeout(timer);
          const at = link.wakers.indexOf(done);
          if (at >= 0) link.wakers.splice(at, 1);
          resolve();
        }
        link.wakers.push(done);
      });
    }
  }
}

/** Accepts the connections of every peer, lane by lane; anything else is refused and logged. */
function acceptPeers(server: Server, options: TcpTransportOptions, commId: number, sockets: Map<number, Connection[]>): Promise<void> {
  const lanes = options.socketsPerPeer ?? 1;
  const expected = options.nranks - 1;
  const complete = (r: number) => (sockets.get(r)?.filter(Boolean).length ?? 0) === lanes;
  return new Promise<void>((resolve, reject) => {
    if (expected === 0) return resolve();
    const timer = setTimeout(() => reject(new TscclError(ErrorCode.TIMEOUT,
      `Rank ${options.rank} timed out after ${options.timeoutMs} ms waiting for ranks ${Array.from({ length: options.nranks }, (_, r) => r).filter((r) => r !== options.rank && !complete(r)).join(', ')} to connect`,
      { rank: options.rank })), options.timeoutMs);
    server.on('connection', (socket) => {
      socket.setNoDelay(true);
      socket.on('error', () => {});
      const refuse = (why: string) => { log('WARN', () => `rank ${options.rank} refused a connection from ${socket.remoteAddress}: ${why}`); socket.destroy(); };
      if (options.token === undefined && !options.allowInsecureRemote && !isLoopbackAddress(socket.remoteAddress)) return refuse('the job has no token, so only loopback peers may join');
      const nonce = newNonce();
      const greeting = Buffer.alloc(GREETING_BYTES);
      greeting.write(HANDSHAKE_MAGIC, 0, 'latin1');
      greeting.writeUInt8(1, 4);
      greeting.writeUInt8(options.token === undefined ? 0 : 1, 5);
      greeting.set(nonce, 6);
      socket.write(greeting);
      const intake = intakeOf(socket);
      readExactly(socket, intake, HELLO_BYTES, options.timeoutMs).then((hello) => {
        const mac = hello.subarray(0, 32);
        const peer = hello.readUInt32LE(32);
        const ok = options.token === undefined ? Buffer.from(mac).equals(NO_TOKEN_MAC) : checkProof(options.token, PURPOSE, nonce, mac);
        if (!ok) return refuse('wrong job token');
        if (hello.readUInt32LE(36) !== commId) return refuse('it belongs to another communicator');
        const lane = hello.readUInt32LE(40);
        if (hello.readUInt32LE(44) !== lanes) return refuse(`it uses ${hello.readUInt32LE(44)} sockets per peer and this rank ${lanes}: set the same TSCCL_NSOCKS_PERPEER on every rank`);
        if (peer === options.rank || peer >= options.nranks || lane >= lanes || sockets.get(peer)?.[lane] !== undefined) return refuse(`unexpected rank ${peer} socket ${lane}`);
        socket.write(Buffer.of(1));
        let peerLanes = sockets.get(peer);
        if (peerLanes === undefined) sockets.set(peer, (peerLanes = new Array<Connection>(lanes)));
        peerLanes[lane] = { socket, intake };
        if ([...sockets.keys()].filter(complete).length === expected) { clearTimeout(timer); resolve(); }
      }, (err: Error) => refuse(err.message));
    });
  });
}

async function dialPeer(host: string, port: number, options: TcpTransportOptions, commId: number, peer: number, lane: number, readBuffer: Uint8Array): Promise<Connection> {
  const intake = new Intake();
  const socket = connect({ host, port, ...readInto(readBuffer, intake) });
  socket.setNoDelay(true);
  await new Promise<void>((resolve, reject) => {
    socket.once('connect', resolve);
    socket.once('error', (err) => reject(new TscclError(ErrorCode.PEER_LOST, `Rank ${options.rank} cannot connect to rank ${peer} at ${host}:${port}: ${err.message}`, { rank: options.rank, peer })));
  });
  const greeting = await readExactly(socket, intake, GREETING_BYTES, options.timeoutMs);
  if (greeting.toString('latin1', 0, 4) !== HANDSHAKE_MAGIC) throw new TscclError(ErrorCode.PEER_LOST, `${host}:${port} is not a tsccl rank`, { peer });
  if (greeting.readUInt8(5) === 1 && options.token === undefined) {
    throw new TscclError(ErrorCode.INVALID_ARGUMENT, `Rank ${peer} requires the job token: set TSCCL_JOB_TOKEN`, { rank: options.rank, peer });
  }
  const hello = Buffer.alloc(HELLO_BYTES);
  hello.set(options.token === undefined ? NO_TOKEN_MAC : proveToken(options.token, PURPOSE, greeting.subarray(6, 22)), 0);
  hello.writeUInt32LE(options.rank, 32);
  hello.writeUInt32LE(commId, 36);
  hello.writeUInt32LE(lane, 40);
  hello.writeUInt32LE(options.socketsPerPeer ?? 1, 44);
  socket.write(hello);
  const answer = await readExactly(socket, intake, 1, options.timeoutMs).catch(() => Buffer.of(0));
  if (answer[0] !== 1) throw new TscclError(ErrorCode.INVALID_ARGUMENT, `Rank ${peer} refused rank ${options.rank}'s connection (wrong job token or communicator)`, { rank: options.rank, peer });
  return { socket, intake };
}

/**
 * Feeds a waiting receiver as the bytes come. Pieces handed on are whole elements at aligned
 * addresses (a reduction views them as typed arrays). A plain receive offers its destination as
 * the place to read to, and takes the bytes of every read as they are: a read that ends inside an
 * element must not send the reads after it to the read buffer (2 processes, exchanges of 4 MiB:
 * 1.9 ms each when they were, copied twice, 1.3 straight into the destination, as bare Node's).
 * A reduction reads into the transport's read buffer: when a read ended
 * inside an element, the next read lands behind room for the element's first bytes at the
 * buffer's start, and they are put there when it came, so the element is whole and everything
 * after it stays aligned. (Reads end anywhere: loopback hands them out in 65483-byte segments.
 * Handed over from the buffer's start, every later piece sat at an odd address and was copied to
 * the align buffer first: 2 processes, 8 MB all-reduce, 5-23% of the bytes each rank reduced.)
 * A piece elsewhere (a buffered frame, a read that came before this sink) still takes that copy,
 * block by block. A read into a destination may land after the receiver gave up (the buffer of
 * a read is chosen before the read waits), so memory of a receive that failed holds whatever
 * came.
 */
export function streamingSink(receiver: Pick<WaitingRecv, 'elementBytes' | 'consume' | 'cancelled'>, buffers: ReceiveBuffers, finished: () => void): FrameSink {
  const into = receiver.consume.into;
  const e = into === undefined ? receiver.elementBytes : 1;
  const { read, align } = buffers;
  const carry = new Uint8Array(e);
  let carried = 0;
  let offset = 0;
  const block = align.byteLength - (align.byteLength % e);
  const hand = (piece: Uint8Array) => {
    if (receiver.cancelled || piece.byteLength === 0) return;
    if (piece.byteOffset % e === 0) {
      receiver.consume(piece, offset);
      offset += piece.byteLength;
      return;
    }
    for (let at = 0; at < piece.byteLength; at += block) {
      const part = piece.subarray(at, Math.min(piece.byteLength, at + block));
      align.set(part);
      receiver.consume(align.subarray(0, part.byteLength), offset);
      offset += part.byteLength;
    }
  };
  return {
    place: (bytes) => {
      if (receiver.cancelled) return undefined;
      // A copy carries nothing (e is 1), so each read goes on into the destination.
      if (into !== undefined) return into.subarray(offset, offset + bytes);
      if (carried === 0) return undefined;
      return read.subarray(carried, carried + Math.min(bytes, read.byteLength - carried));
    },
    payload: (piece) => {
      let at = 0;
      let bytes = piece;
      if (carried > 0 && piece.buffer === read.buffer && piece.byteOffset === read.byteOffset + carried) {
        // Read right behind the carried bytes' place (see place): they lead the piece. They are
        // put there only now: Node asks a socket for its next read's memory right after its last
        // read, and the other sockets of the transport read into the same memory meanwhile.
        read.set(carry.subarray(0, carried));
        bytes = read.subarray(0, carried + piece.byteLength);
        carried = 0;
      } else if (carried > 0) {
        const take = Math.min(e - carried, piece.byteLength);
        carry.set(piece.subarray(0, take), carried);
        carried += take;
        at = take;
        if (carried < e) return;
        hand(carry.slice());
        carried = 0;
      }
      const whole = Math.floor((bytes.byteLength - at) / e) * e;
      hand(bytes.subarray(at, at + whole));
      const rest = bytes.subarray(at + whole);
      carry.set(rest, 0);
      carried = rest.byteLength;
    },
    end: finished,
  };
}

/**
 * Whether a frame carries a CRC32: as the call (or TSCCL_CHECKSUM, or the transport's option)
 * says, else only to a peer on another machine. A wire, a NIC and its offloads can corrupt data
 * that TCP's 16-bit checksum lets through; between processes of one machine the bytes only move
 * between memory buffers, as between thread ranks, where checksums are off by default too. (On
 * loopback they cost 1.1 ms of a 5.1 ms 8 MB all-reduce: the sender reads the data once more.)
 */
export function checksumsFrame(choice: boolean | undefined, sameMachine: boolean): boolean {
  return choice ?? !sameMachine;
}

/** K contiguous parts of a message, cut at 64-byte boundaries so every element type stays whole. */
export function stripes(total: number, k: number): [number, number][] {
  const units = Math.ceil(total / 64);
  const cut = (i: number) => Math.min(total, Math.floor((i * units) / k) * 64);
  return Array.from({ length: k }, (_, i) => [cut(i), cut(i + 1)]);
}
