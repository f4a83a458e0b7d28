import { performance } from 'node:perf_hooks';
import { ErrorCode, type ErrorCodeValue, type TscclError } from '../../errors.js';
import { crc32 } from '../../kernels/crc32.js';
import type { Store } from '../../store/store.js';
import { machineOf } from '../../topology/host-key.js';
import {
  type Consume,
  type MessageTag,
  type SendHandle,
  type Transport,
  type WaitContext,
  messageMismatch,
} from '../transport.js';
import { coreYield } from '../sched-yield.js';
import { rankSpin } from '../wait.js';
import { ControlChannel, type PeerFailed, heartbeatFrame } from './control-channel.js';
import type { Frame } from './frame.js';
import { FrameReader } from './frame-reader.js';
import { FrameHolds } from './hold.js';
import { readNow } from './intake.js';
import { receivePollMs, waitOnLink } from './link-wait.js';
import { forgetLive, registerLive } from './live-transports.js';
import { type Mesh, buildMesh } from './mesh.js';
import type { HandshakeOptions } from './handshake.js';
import { Reconnector } from './reconnect.js';
import { PathWatch } from './path-watch.js';
import type { RecoveryCounts } from '../transport.js';
import { PeerLink, type WaitingRecv } from './peer-link.js';
import { ReceiveDispatch } from './receive-dispatch.js';
import { Resend } from './resend.js';
import type { ReceiveBuffers } from './receive-sink.js';
import { SendPath, checksumsFrame } from './send-path.js';
import { StagingPool } from './staging-pool.js';
import { TcpLowLatencySlots } from './tcp-low-latency.js';
import {
  COPY_FRAME_MAX_BYTES,
  HOLD_WHILE_SENDING_MS,
  LINGER_MS,
  MAX_PAYLOAD_BYTES,
  READ_BUFFER_BYTES,
  RECONNECT_MS,
  RESEND_RETRIES,
  ONE_SHOT_SPIN_READ_MS,
  RESEND_WINDOW_BYTES,
  SPIN_READ_MS,
} from './tcp-tunables.js';

export { announceExits, closeLiveTransports } from './live-transports.js';

export interface TcpTransportOptions {
  readonly rank: number;
  readonly nranks: number;
  /** Rendezvous: each rank publishes its address here and reads its peers'. */
  readonly store: Store;
  /** Distinguishes communicators (and jobs) that share a store. */
  readonly commName: string;
  /** Address to listen on (an address of the chosen interface). */
  readonly host: string;
  /**
   * Several network paths (TSCCL_SOCKET_IFNAME choosing several interfaces): this rank's address
   * on each, `host` first. There are at least as many sockets per peer as paths, lane i over path
   * i modulo their count; a lane whose path fails is re-established over another (reconnect.ts).
   */
  readonly paths?: readonly string[];
  readonly token?: string;
  /** Accept peers without a token from non-loopback addresses. */
  readonly allowInsecureRemote?: boolean;
  /** CRC32 every payload (true) or none (false); default: only to peers on other machines (see checksumsFrame). */
  readonly checksum?: boolean;
  readonly timeoutMs: number;
  /** Abandons building the connections (a shrink that failed meanwhile): nothing of them is left behind. */
  readonly signal?: AbortSignal;
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
  /** How often a frame that failed its checksum is asked for again before the link fails (default RESEND_RETRIES; 0: never). */
  readonly resendRetries?: number;
  /** Bytes of small checksummed frames kept per peer for resend (default RESEND_WINDOW_BYTES). */
  readonly resendWindowBytes?: number;
  /** How long a socket that broke while its peer lives may take to be re-established (default RECONNECT_MS; 0: never, the peer is lost at once). */
  readonly reconnectMs?: number;
}

/** What the transport is made of once its mesh is up. */
interface TransportParts {
  readonly rank: number;
  readonly nranks: number;
  readonly commId: number;
  readonly links: PeerLink[];
  readonly hostKeys: readonly string[];
  readonly buffers: ReceiveBuffers;
  readonly checksum: boolean | undefined;
  readonly holdWhileSendingMs: number;
  readonly maxPayloadBytes: number;
  readonly resendRetries: number;
  /** The mesh's listener, kept open for peers that dial a broken socket again. */
  readonly mesh: Mesh;
  readonly handshake: HandshakeOptions;
  readonly reconnectMs: number;
  /** This rank's address on each network path. */
  readonly paths: readonly string[];
}

/** Resolves once the peer acknowledged every frame the link keeps for resend, the link is down, or `ms` passed. */
function whenAcknowledged(link: PeerLink, ms: number): Promise<void> {
  return new Promise<void>((resolve) => {
    const check = () => {
      if (link.retained.holding.frames > 0 && link.error === undefined) return;
      clearTimeout(timer);
      const at = link.wakers.indexOf(check);
      if (at >= 0) link.wakers.splice(at, 1);
      resolve();
    };
    const timer = setTimeout(() => {
      link.retained.forgetAll();
      check();
    }, ms);
    link.wakers.push(check);
    check();
  });
}

/**
 * A stable id of a communicator name, carried in every frame to catch cross-talk: FNV-1a's top 30
 * bits, so that every id is a small integer to V8. Half of the 32-bit ids were not, and the first
 * such id a job met (a warm-up communicator's) changed the shape of every object holding an id
 * (transport, links, send and receive paths), the world's included, whose compiled code was then
 * thrown away in the job's first calls (docs/tuning.md, "Arrays of one kind").
 */
export function commIdOf(name: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < name.length; i++) h = Math.imul(h ^ name.charCodeAt(i), 0x01000193);
  return h >>> 2;
}

/** Whether a socket to the link's peer still holds bytes of this rank's to write (a loop: no closure per call). */
function owesBytes(link: PeerLink): boolean {
  for (let lane = 0; lane < link.connections.length; lane++)
    if (link.connections[lane].socket.writableLength > 0) return true;
  return false;
}

/** Whether `receiver` is done, or without one, whether a message waits on `channel`. */
function arrived(link: PeerLink, channel: number, receiver: WaitingRecv | undefined): boolean {
  return receiver === undefined ? link.hasMessage(channel) : receiver.done;
}

/**
 * Ranks in different processes or hosts. One socket per pair of ranks and lane, which both read
 * and write: the higher rank dials it and proves the job token, and both ends read frames into
 * the transport's memory (mesh.ts, handshake.ts, accepted-socket.ts). Sends go out through the send
 * path; received frames stream into a waiting recv, or wait in a per-(peer, channel) inbox for it
 * (frame-reader.ts, receive-dispatch.ts). The state of each peer is its PeerLink; failures,
 * heartbeats and goodbyes travel on the control channel. docs/tcp-transport.md maps the parts.
 */
export class TcpTransport implements Transport {
  readonly rank: number;
  readonly nranks: number;
  private readonly links: PeerLink[];
  /** Each rank's host key, learnt at rendezvous: which peers share a machine. */
  readonly hostKeys: readonly string[];
  /** The id every frame of this communicator carries (commIdOf its name). */
  readonly commId: number;
  private closing = false;
  private closed: Promise<void> | undefined;
  /** The memory inbound sockets read into, and where misaligned pieces are copied (ReceiveBuffers). */
  private readonly buffers: ReceiveBuffers;
  private readonly control: ControlChannel;
  private readonly dispatch: ReceiveDispatch;
  private readonly sendPath: SendPath;
  private readonly holds: FrameHolds;
  private readonly reader: FrameReader;
  private readonly resend: Resend;
  private readonly reconnector: Reconnector;
  /** Where there are several network paths: finds sockets whose path failed. */
  private pathWatch: PathWatch | undefined;
  private readonly mesh: Mesh;
  /** Ranks of this communicator on this rank's machine, whatever their network namespace: they share its cores. */
  readonly machineRanks: number;
  /** How long a small receive polls before it sleeps (rankSpin of machineRanks, read once). */
  private readonly pollBudgetMs: number;
  /** sched_yield on every turn of a poll, when the ranks on this machine outnumber its cores (rankSpin). */
  private readonly pollYield: (() => number) | undefined;
  /** The one-shot path's messages: one copied frame to each peer per call. */
  readonly lowLatency: TcpLowLatencySlots;
  readonly concurrentRecvs = true;
  /** The last collectives this rank entered and ended successfully (kept by its status board, told to the peers on exit). */
  readonly progress = { entered: 0, ended: 0 };
  /** How long a broken socket may take to come back (TSCCL_RECONNECT_MS; 0: never tried). */
  readonly reconnectMs: number;

  private constructor(parts: TransportParts) {
    const { rank, commId, links, buffers } = parts;
    this.rank = rank;
    this.nranks = parts.nranks;
    this.links = links;
    this.hostKeys = parts.hostKeys;
    this.commId = commId;
    this.buffers = buffers;
    this.reconnectMs = parts.reconnectMs;
    this.machineRanks = links.filter((link) => link.sameMachine).length;
    const spin = rankSpin(this.machineRanks);
    this.pollBudgetMs = spin.spinMs;
    this.pollYield = spin.spinYields ? coreYield() : undefined;
    this.control = new ControlChannel(links, { rank, commId });
    this.resend = new Resend({ rank, commId, retries: parts.resendRetries, crc32 });
    this.dispatch = new ReceiveDispatch(this.control, this.resend, { rank, commId, buffers });
    this.sendPath = new SendPath(this.dispatch, {
      rank,
      commId,
      checksum: parts.checksum,
      resend: parts.resendRetries > 0,
    });
    this.holds = new FrameHolds(parts.holdWhileSendingMs);
    this.reader = new FrameReader({
      rank,
      dispatch: this.dispatch,
      resend: this.resend,
      holds: this.holds,
      buffers,
      maxPayloadBytes: parts.maxPayloadBytes,
      closing: () => this.closing,
      broke: (link, lane, at) => this.reconnector.broke(link, lane, at),
    });
    this.mesh = parts.mesh;
    this.reconnector = new Reconnector({
      handshake: parts.handshake,
      graceMs: parts.reconnectMs,
      readBuffer: buffers.read,
      addresses: parts.mesh.addresses,
      paths: parts.paths,
      links,
      reader: this.reader,
      resend: this.resend,
      closing: () => this.closing,
    });
    this.mesh.resumeWith(this.reconnector.resume);
    this.lowLatency = new TcpLowLatencySlots(this);
  }

  static async create(options: TcpTransportOptions): Promise<TcpTransport> {
    const { rank, nranks } = options;
    const commId = commIdOf(options.commName);
    const readMemory = options.readMemory ?? ((bytes: number) => Buffer.allocUnsafeSlow(bytes));
    const readBuffer = readMemory(READ_BUFFER_BYTES);
    const paths = options.paths !== undefined && options.paths.length > 0 ? options.paths : [options.host];
    const handshake: HandshakeOptions = {
      rank,
      nranks,
      ...(options.token === undefined ? {} : { token: options.token }),
      ...(options.allowInsecureRemote === undefined ? {} : { allowInsecureRemote: options.allowInsecureRemote }),
      commId,
      lanes: Math.max(options.socketsPerPeer ?? 1, paths.length),
      timeoutMs: options.timeoutMs,
    };
    const mesh = await buildMesh({ ...options, ...handshake, paths, readBuffer });
    const resendRetries = options.resendRetries ?? RESEND_RETRIES;
    // Reconnection carries again what resend keeps: without resend there is nothing to carry.
    const reconnectMs = resendRetries > 0 ? (options.reconnectMs ?? RECONNECT_MS) : 0;
    const standIn = reconnectMs > 0 ? heartbeatFrame(commId) : undefined;
    const machine = machineOf(mesh.hostKeys[rank]);
    const links = Array.from(
      { length: nranks },
      (_, peer) =>
        new PeerLink(peer, {
          connections: peer === rank ? [] : mesh.connections.get(peer)!,
          sameMachine: machineOf(mesh.hostKeys[peer]) === machine,
          resendWindowBytes: options.resendWindowBytes ?? RESEND_WINDOW_BYTES,
          ...(standIn === undefined ? {} : { standIn }),
        }),
    );
    const transport = new TcpTransport({
      rank,
      nranks,
      commId,
      links,
      hostKeys: mesh.hostKeys,
      buffers: { read: readBuffer, align: readMemory(READ_BUFFER_BYTES), staging: new StagingPool(readMemory) },
      checksum: options.checksum,
      holdWhileSendingMs: options.holdWhileSendingMs ?? HOLD_WHILE_SENDING_MS,
      maxPayloadBytes: options.maxPayloadBytes ?? MAX_PAYLOAD_BYTES,
      resendRetries,
      mesh,
      handshake,
      reconnectMs,
      paths,
    });
    for (const link of links) {
      link.connections.forEach((c, lane) => {
        transport.reader.listen(link, c, lane);
      });
    }
    registerLive(transport);
    const heartbeatMs = options.heartbeatTimeoutMs ?? Infinity;
    transport.control.startHeartbeat(heartbeatMs);
    // Telling a failed path from an idle one takes the heartbeats on every socket.
    if (Number.isFinite(heartbeatMs) && reconnectMs > 0 && paths.length > 1)
      transport.pathWatch = new PathWatch(
        links.filter((link) => checksumsFrame(options.checksum, link.sameMachine)),
        transport.reconnector,
        { rank, closing: () => transport.closing },
      );
    return transport;
  }

  async send(peer: number, channel: number, data: Uint8Array, tag: MessageTag, _ctx: WaitContext): Promise<SendHandle> {
    return this.trySend(peer, channel, data, tag);
  }

  /** A socket takes any send at once (it buffers what the kernel cannot take yet), so this never refuses. */
  trySend(peer: number, channel: number, data: Uint8Array, tag: MessageTag): SendHandle {
    return { peer, channel, ticket: this.sendOnLink(peer, channel, data, tag) };
  }

  /** trySend of a message the frame copies (see LowLatencyLinks), with no handle to wait on: delivered once it returns. */
  sendCopied(peer: number, channel: number, data: Uint8Array, tag: MessageTag): void {
    if (data.byteLength > COPY_FRAME_MAX_BYTES)
      throw new RangeError(`a copied frame holds ${COPY_FRAME_MAX_BYTES} bytes, asked for ${data.byteLength}`);
    this.sendOnLink(peer, channel, data, tag);
  }

  /** Sends on the peer's link, unless it is down; the send's ticket. */
  private sendOnLink(peer: number, channel: number, data: Uint8Array, tag: MessageTag): number {
    const link = this.links[peer];
    if (link.error !== undefined) throw this.sentOtherCall(link, channel, data.byteLength, tag) ?? link.error;
    return this.sendPath.send(link, channel, data, tag);
  }

  /**
   * A peer that left may have sent, before it left, a message of another operation at this call
   * number: that names the cause (the ranks called different operations), where the loss only
   * names its effect. Whatever a late rank's timing, it hears of the mismatch.
   */
  private sentOtherCall(link: PeerLink, channel: number, bytes: number, tag: MessageTag): TscclError | undefined {
    const waiting = link.inbox.get(channel)?.[0]?.header;
    if (waiting === undefined || waiting.commId !== this.commId || waiting.seq !== tag.seq) return undefined;
    if (waiting.opcode === tag.opcode) return undefined;
    return messageMismatch(this.rank, link.peer, { ...tag, bytes }, { ...waiting, bytes: waiting.length });
  }

  /** Takes the channel's next message if it has arrived whole; false if not. */
  tryRecv(
    peer: number,
    channel: number,
    bytes: number,
    _elementBytes: number,
    tag: MessageTag,
    consume: Consume,
  ): boolean {
    const frame = this.takeMessage(peer, channel);
    if (frame === undefined) return false;
    this.dispatch.checkMatch(this.links[peer], frame.header, bytes, tag);
    if (bytes > 0) consume(frame.payload, 0);
    return true;
  }

  /** The next whole message on a channel from a peer, taken out of its inbox without a check (the one-shot path checks its own). */
  takeMessage(peer: number, channel: number): Frame | undefined {
    return this.links[peer].inbox.get(channel)?.shift();
  }

  hasMessage(peer: number, channel: number): boolean {
    return this.links[peer].hasMessage(channel);
  }

  recycle(frame: Frame): void {
    this.dispatch.recycle(frame);
  }

  /**
   * Reads the peer's socket without turning the event loop until a message waits on `channel`,
   * for up to ONE_SHOT_SPIN_READ_MS; whether one does (see spinRead).
   */
  spinForMessage(peer: number, channel: number): boolean {
    return this.spinRead(this.links[peer], channel, undefined, ONE_SHOT_SPIN_READ_MS);
  }

  /**
   * Reads the link's socket without turning the event loop until `receiver` is done (without
   * one: until a message waits on `channel`), for up to `ms`; whether it is. No closure
   * per wait: the one-shot path asks on every call. Not while this rank still has bytes queued
   * for the peer (it may be waiting for them, and only the event loop sends them), nor where the
   * ranks outnumber the cores: the reads that find nothing take CPU the peer needs.
   */
  private spinRead(link: PeerLink, channel: number, receiver: WaitingRecv | undefined, ms: number): boolean {
    const connection = link.connections[0];
    if (connection === undefined || this.pollYield !== undefined || owesBytes(link))
      return arrived(link, channel, receiver);
    // Most small messages are there at the first read: the clock is read only after it.
    let read = readNow(connection.socket, this.buffers.read, connection.intake);
    if (read === undefined) return arrived(link, channel, receiver);
    if (read > 0 && arrived(link, channel, receiver)) return true;
    const until = performance.now() + ms;
    while (performance.now() < until && link.error === undefined) {
      read = readNow(connection.socket, this.buffers.read, connection.intake);
      if (read === undefined) break;
      if (read > 0 && arrived(link, channel, receiver)) return true;
    }
    return arrived(link, channel, receiver);
  }

  /** Waits until a message from `peer` is in on `channel`; a message of up to `bytes` polls as a receive of that size does. */
  async waitForMessage(peer: number, channel: number, bytes: number, ctx: WaitContext): Promise<void> {
    const link = this.links[peer];
    await waitOnLink(
      link,
      () => link.hasMessage(channel),
      ctx,
      receivePollMs(bytes, this.pollBudgetMs),
      this.pollYield,
    );
  }

  async recv(
    peer: number,
    channel: number,
    bytes: number,
    elementBytes: number,
    tag: MessageTag,
    consume: Consume,
    ctx: WaitContext,
  ): Promise<void> {
    if (this.tryRecv(peer, channel, bytes, elementBytes, tag, consume)) return;
    const link = this.links[peer];
    // Nothing queued: wait for the next frame of this channel to stream straight into `consume`.
    const receiver: WaitingRecv = {
      bytes,
      elementBytes,
      tag,
      consume,
      done: false,
      error: undefined,
      cancelled: false,
    };
    link.waiting[channel] = receiver;
    link.releaseHeld(false);
    const pollMs = receivePollMs(bytes, this.pollBudgetMs);
    try {
      // A receive that would poll reads the socket in place first, as the one-shot path does.
      if (pollMs === 0 || !this.spinRead(link, channel, receiver, SPIN_READ_MS))
        await waitOnLink(link, () => receiver.done, ctx, pollMs, this.pollYield);
    } catch (err) {
      receiver.cancelled = true;
      throw err;
    } finally {
      if (link.waiting[channel] === receiver) link.waiting[channel] = undefined;
    }
    if (receiver.error !== undefined) throw receiver.error;
  }

  isDelivered(handle: SendHandle): boolean {
    return this.links[handle.peer].written >= handle.ticket;
  }

  async waitDelivered(handle: SendHandle, ctx: WaitContext): Promise<void> {
    const link = this.links[handle.peer];
    if (link.written >= handle.ticket) return;
    await this.holds.whileSending(this.links, () =>
      waitOnLink(link, () => link.written >= handle.ticket, ctx, 0, this.pollYield),
    );
  }

  /** What each peer's link recovered from so far (resend.ts), by peer rank; this rank's own entry stays zero. */
  recoveries(): RecoveryCounts[] {
    return this.links.map((link) => ({ ...link.recovery }));
  }

  /** Peers whose connection broke (or fell silent) without a goodbye: dead, as far as this rank can tell. */
  lostPeers(): number[] {
    return this.control.lostPeers();
  }

  /** Peers that said goodbye: they destroyed this communicator, or their process ended. */
  departedPeers(): number[] {
    return this.links.filter((link) => link.saidGoodbye).map((link) => link.peer);
  }

  /**
   * Why a peer counts as gone for good, if one does: its process ended (its address refuses
   * connections, or it said goodbye), or it fell silent past the heartbeat timeout. Such a
   * peer cannot take part in running a call again (operation retry).
   */
  goneReason(): string | undefined {
    this.control.lostPeers(); // judges the heartbeats now
    for (const link of this.links) {
      if (link.saidGoodbye) return `rank ${link.peer} destroyed the communicator or its process ended`;
      const lost = link.error?.details.lost;
      if (lost === 'process-gone') return `rank ${link.peer}'s process is gone`;
      if (lost === 'silent') return `rank ${link.peer} fell silent past the heartbeat timeout`;
    }
    return undefined;
  }

  /** Ends every wait on every link now, so each re-checks its context (an abort). */
  wakeAll(): void {
    for (const link of this.links) link.wake();
  }

  /** Highest collective seq heard from a peer (this rank's own is tracked by the caller). */
  lastSeqFrom(peer: number): number {
    return this.links[peer].lastSeq;
  }

  /** Tells every peer this rank gave up on the communicator, so their waits end now. */
  announceFailure(code: ErrorCodeValue, seq: number, origin: number, ended: number): void {
    this.control.announceFailure(code, seq, origin, ended);
  }

  /** Tells every peer this rank's process is exiting, after the collectives it ended. */
  announceExit(): void {
    this.control.announceFailure(ErrorCode.PEER_LOST, this.progress.entered, this.rank, this.progress.ended);
  }

  /** Tells every peer this rank is waiting in collective `seq`. */
  announceSeq(seq: number): void {
    this.control.announceSeq(seq);
  }

  /**
   * The first of `peers` that announced a failure before ending collective `seq` (at any time for
   * seq undefined), whose connection broke, or that fell silent.
   */
  failedBefore(peers: readonly number[], seq: number | undefined): PeerFailed | undefined {
    return this.control.failedBefore(peers, seq);
  }

  /**
   * Says goodbye to every peer, and half-closes once the peer acknowledged every frame this rank
   * kept for resend (it may still ask for one again); then keeps reading until each peer has
   * closed too. All within LINGER_MS: closing with unread bytes would make the kernel reset the
   * connection and could destroy data still on its way to a peer.
   */
  close(): Promise<void> {
    this.closed ??= this.closeAfterPendingBreaks();
    return this.closed;
  }

  private async closeAfterPendingBreaks(): Promise<void> {
    // A socket that broke (or was destroyed) in this turn of the event loop reports it from its
    // close callback a turn later, and a closing transport ignores such reports: a call that
    // ended without a turn (its frames written and read in place) would hang up on a peer still
    // owed a frame of the broken socket.
    for (let turn = 0; turn < 2; turn++) await new Promise((resolve) => setImmediate(resolve));
    this.closing = true;
    this.control.stopHeartbeat();
    this.pathWatch?.stop();
    forgetLive(this);
    // A peer still dialing a socket that broke is owed what was sent on it: let it come back first.
    await this.reconnector.settled(LINGER_MS);
    await this.hangUp();
  }

  /** Says goodbye and closes every socket (close(), once no peer is owed a reconnection). */
  private hangUp(): Promise<void> {
    this.reconnector.stop();
    this.mesh.close();
    const sockets = this.links.flatMap((l) => l.connections.map((c) => c.socket)).filter((socket) => !socket.destroyed);
    const closed = Promise.all(
      sockets.map(
        (socket) =>
          new Promise<void>((resolve) => {
            const timer = setTimeout(() => {
              socket.destroy();
            }, LINGER_MS);
            socket.once('close', () => {
              clearTimeout(timer);
              resolve();
            });
          }),
      ),
    ).then(() => undefined);
    const goodbye = this.control.goodbyeFrame();
    for (const link of this.links) {
      const open = link.connections.map((c) => c.socket).filter((socket) => !socket.destroyed);
      if (open.length === 0) continue;
      // Acknowledge what came so far: once this side is ended the peer's close could wait for nothing.
      link.acksDue = true;
      this.resend.flush(link);
      link.connections.forEach(({ socket }, lane) => {
        if (!socket.destroyed) link.writeFrame(lane, [goodbye]);
      });
      void whenAcknowledged(link, LINGER_MS).then(() => {
        for (const socket of open) if (!socket.destroyed) socket.end();
      });
    }
    return closed;
  }
}
