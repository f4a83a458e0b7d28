import { type Server, type Socket, connect, createServer } from 'node:net';
import { crc32 } from 'node:zlib';
import { ErrorCode, type ErrorCodeValue, TscclError } from '../../errors.js';
import { log } from '../../log.js';
import { NO_TOKEN_MAC, checkProof, isLoopbackAddress, newNonce, proveToken } from '../../security/job-token.js';
import type { Store } from '../../store/store.js';
import { hostKey } from '../../topology/host-key.js';
import { type Consume, type MessageTag, type SendHandle, type Transport, type WaitContext, opcodeName } from '../transport.js';
import { FLAG_CHECKSUM, type Frame, type FrameHeader, FrameParser, type FrameSink, bufferingSink, encodeHeader } from './frame.js';

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
  /** CRC32 every payload (default true). */
  readonly checksum?: boolean;
  readonly timeoutMs: number;
  readonly maxPayloadBytes?: number;
}

const HANDSHAKE_MAGIC = 'TSCH';
const GREETING_BYTES = 22;
const HELLO_BYTES = 40;
const PURPOSE = 'tsccl-transport';

interface Link {
  readonly peer: number;
  readonly socket: Socket | undefined;
  readonly inbox: Map<number, Frame[]>;
  readonly wakers: Set<() => void>;
  posted: number;
  written: number;
  error: TscclError | undefined;
  /** Highest collective seq received from this peer. */
  lastSeq: number;
  /** Set when the peer announced it gave up on the communicator. */
  failure: { code: ErrorCodeValue; seq: number } | undefined;
  /** The peer closed on purpose (destroyed its communicator): not a failure unless its data is still needed. */
  goodbye: boolean;
  /** A recv waiting on a channel whose inbox is empty: the next frame streams straight into it. */
  readonly waiting: Map<number, WaitingRecv>;
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
const CONTROL_CHANNEL = 0xffff;
const GOODBYE = 0xffff;
const ERROR_CODES = Object.values(ErrorCode);

const LINGER_MS = 2000;
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
 * Ranks in different processes or hosts. One socket per pair of ranks, full mesh: the higher
 * rank connects to the lower one and proves the job token; the listener closes once every
 * expected peer is in, so nobody else can join. A send writes header and payload straight from
 * the caller's memory and counts as delivered when the socket has taken it, after which the
 * buffer may be reused. Received frames wait in a per-(peer, channel) inbox for their recv.
 */
export class TcpTransport implements Transport {
  readonly rank: number;
  readonly nranks: number;
  private readonly links: Link[];
  /** Each rank's host key, learnt at rendezvous: which peers share a machine. */
  readonly hostKeys: readonly string[];
  private readonly commId: number;
  private readonly checksum: boolean;
  private closing = false;
  private closed: Promise<void> | undefined;

  private constructor(rank: number, nranks: number, links: Link[], commId: number, checksum: boolean, hostKeys: string[]) {
    this.rank = rank;
    this.nranks = nranks;
    this.links = links;
    this.hostKeys = hostKeys;
    this.commId = commId;
    this.checksum = checksum;
  }

  static async create(options: TcpTransportOptions): Promise<TcpTransport> {
    const { rank, nranks, store, commName, host } = options;
    const commId = commIdOf(commName);
    const sockets = new Map<number, Socket>();
    const server = createServer();
    const accepted = acceptPeers(server, options, commId, sockets);
    await new Promise<void>((resolve, reject) => { server.once('error', reject); server.listen(0, host, () => resolve()); });
    const port = (server.address() as { port: number }).port;
    const myKey = hostKey();
    await store.set(`tcp/${commName}/${rank}`, Buffer.from(JSON.stringify({ host, port, hostKey: myKey })), { timeoutMs: options.timeoutMs });
    const peers = Array.from({ length: nranks }, (_, peer) => peer);
    let hostKeys: string[];
    try {
      [, hostKeys] = await Promise.all([
        accepted,
        Promise.all(peers.map(async (peer) => {
          if (peer === rank) return myKey;
          const where = JSON.parse(Buffer.from(await store.get(`tcp/${commName}/${peer}`, { timeoutMs: options.timeoutMs })).toString()) as { host: string; port: number; hostKey: string };
          if (peer < rank) sockets.set(peer, await dialPeer(where.host, where.port, options, commId, peer));
          return where.hostKey;
        })),
      ]);
    } finally {
      server.close();
    }
    const links: Link[] = Array.from({ length: nranks }, (_, peer) => ({
      peer, socket: peer === rank ? undefined : sockets.get(peer), inbox: new Map(), wakers: new Set(), posted: 0, written: 0, error: undefined, lastSeq: 0, failure: undefined, goodbye: false, waiting: new Map(),
    }));
    const transport = new TcpTransport(rank, nranks, links, commId, options.checksum ?? true, hostKeys);
    for (const link of links) if (link.socket !== undefined) transport.listen(link, options.maxPayloadBytes ?? 2 ** 34);
    liveTransports.add(transport);
    if (!exitHookInstalled) {
      exitHookInstalled = true;
      // A script that ends without destroying its communicators still leaves politely.
      process.once('beforeExit', () => { void closeLiveTransports(); });
    }
    return transport;
  }

  async send(peer: number, channel: number, data: Uint8Array, tag: MessageTag, _ctx: WaitContext): Promise<SendHandle> {
    const link = this.links[peer];
    if (link.error !== undefined) throw link.error;
    const ticket = ++link.posted;
    if (link.socket === undefined) {
      const sink = this.open(link, this.header(channel, tag, data, 0));
      sink.payload(data);
      sink.end();
      link.written = ticket;
      return { peer, channel, ticket };
    }
    const checksum = this.checksum ? crc32(data) : 0;
    const socket = link.socket;
    socket.cork();
    socket.write(encodeHeader(this.header(channel, tag, data, checksum)));
    socket.write(data, (err) => { if (err === undefined || err === null) link.written = Math.max(link.written, ticket); this.wake(link); });
    socket.uncork();
    return { peer, channel, ticket };
  }

  async recv(peer: number, channel: number, bytes: number, elementBytes: number, tag: MessageTag, consume: Consume, ctx: WaitContext): Promise<void> {
    const link = this.links[peer];
    const queued = link.inbox.get(channel);
    if (queued !== undefined && queued.length > 0) {
      const frame = queued.shift()!;
      this.checkMatch(link, frame.header, bytes, tag);
      if (bytes > 0) consume(frame.payload, 0);
      return;
    }
    // Nothing queued: wait for the next frame of this channel to stream straight into `consume`.
    const receiver: WaitingRecv = { bytes, elementBytes, tag, consume, done: false, error: undefined, cancelled: false };
    link.waiting.set(channel, receiver);
    try {
      await this.waitFor(link, () => receiver.done, ctx);
    } catch (err) {
      receiver.cancelled = true;
      throw err;
    } finally {
      if (link.waiting.get(channel) === receiver) link.waiting.delete(channel);
    }
    if (receiver.error !== undefined) throw receiver.error;
  }

  private checkMatch(link: Link, h: FrameHeader, bytes: number, tag: MessageTag): void {
    if (h.length !== bytes || h.seq !== tag.seq || h.opcode !== tag.opcode || h.commId !== this.commId) {
      throw new TscclError(ErrorCode.MISMATCH,
        `Rank ${this.rank} expected ${opcodeName(tag.opcode)} #${tag.seq} of ${bytes} bytes from rank ${link.peer}, `
        + `but rank ${link.peer} sent ${opcodeName(h.opcode)} #${h.seq} of ${h.length} bytes${h.commId !== this.commId ? ' on another communicator' : ''}: the ranks called different operations or counts`,
        { rank: this.rank, peer: link.peer, seq: tag.seq, op: opcodeName(tag.opcode) });
    }
  }

  /** Where an arriving frame's payload goes: the receiver waiting for it, else the inbox. */
  private open(link: Link, header: FrameHeader): FrameSink {
    if (header.channel === CONTROL_CHANNEL) return { payload: () => {}, end: () => this.control(link, header) };
    if (header.channel === 0 && ((header.seq - link.lastSeq) | 0) > 0) link.lastSeq = header.seq;
    const receiver = link.waiting.get(header.channel);
    if (receiver === undefined) return bufferingSink(header, (frame) => this.deliver(link, frame));
    link.waiting.delete(header.channel);
    try {
      this.checkMatch(link, header, receiver.bytes, receiver.tag);
    } catch (err) {
      receiver.error = err as TscclError;
      receiver.done = true;
      this.wake(link);
      return { payload: () => {}, end: () => {} };
    }
    return streamingSink(receiver, () => { receiver.done = true; this.wake(link); });
  }

  isDelivered(handle: SendHandle): boolean {
    return this.links[handle.peer].written >= handle.ticket;
  }

  async waitDelivered(handle: SendHandle, ctx: WaitContext): Promise<void> {
    const link = this.links[handle.peer];
    await this.waitFor(link, () => link.written >= handle.ticket, ctx);
  }

  /** Highest collective seq heard from a peer (this rank's own is tracked by the caller). */
  lastSeqFrom(peer: number): number {
    return this.links[peer].lastSeq;
  }

  /** Tells every peer this rank gave up on the communicator, so their waits end now. */
  announceFailure(code: ErrorCodeValue, seq: number): void {
    for (const link of this.links) {
      if (link.socket === undefined || link.error !== undefined || link.socket.destroyed) continue;
      link.socket.write(encodeHeader({ flags: 0, channel: CONTROL_CHANNEL, commId: this.commId, seq, opcode: ERROR_CODES.indexOf(code), length: 0, checksum: 0 }));
    }
  }

  /** The first peer that announced a failure or whose connection broke. */
  failedPeer(): { rank: number; code: ErrorCodeValue; seq: number } | undefined {
    for (const link of this.links) {
      if (link.failure !== undefined) return { rank: link.peer, ...link.failure };
      if (link.error?.code === ErrorCode.PEER_LOST && !link.goodbye) return { rank: link.peer, code: ErrorCode.PEER_LOST, seq: link.lastSeq };
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
      liveTransports.delete(this);
      const sockets = this.links.flatMap((l) => (l.socket !== undefined && !l.socket.destroyed ? [l.socket] : []));
      this.closed = Promise.all(sockets.map((socket) => new Promise<void>((resolve) => {
        const timer = setTimeout(() => { socket.destroy(); }, LINGER_MS);
        socket.once('close', () => { clearTimeout(timer); resolve(); });
        socket.end(encodeHeader({ flags: 0, channel: CONTROL_CHANNEL, commId: this.commId, seq: 0, opcode: GOODBYE, length: 0, checksum: 0 }));
      }))).then(() => undefined);
    }
    return this.closed;
  }

  private header(channel: number, tag: MessageTag, data: Uint8Array, checksum: number) {
    return { flags: this.checksum ? FLAG_CHECKSUM : 0, channel, commId: this.commId, seq: tag.seq, opcode: tag.opcode, length: data.byteLength, checksum };
  }

  private listen(link: Link, maxPayloadBytes: number): void {
    const parser = new FrameParser(maxPayloadBytes, crc32 as (data: Uint8Array, value?: number) => number);
    const socket = link.socket!;
    socket.on('data', (chunk: Buffer) => {
      try {
        parser.push(chunk, (header) => this.open(link, header));
      } catch (err) {
        this.lose(link, err instanceof TscclError ? err : new TscclError(ErrorCode.MISMATCH, String(err), { peer: link.peer }));
        socket.destroy();
      }
    });
    socket.on('error', () => {});
    socket.resume(); // the handshake left it paused
    // Waiting calls hold timers; an idle link must not keep the process alive after the script ends.
    socket.unref();
    socket.on('close', () => {
      if (this.closing) return;
      const why = link.goodbye ? `rank ${link.peer} destroyed the communicator` : `Rank ${this.rank} lost its connection to rank ${link.peer}`;
      this.lose(link, new TscclError(ErrorCode.PEER_LOST, link.goodbye ? `Rank ${this.rank} needs data from rank ${link.peer}, but ${why}` : why, { rank: this.rank, peer: link.peer }));
    });
  }

  private control(link: Link, header: FrameHeader): void {
    if (header.opcode === GOODBYE) { link.goodbye = true; return; }
    link.failure ??= { code: ERROR_CODES[header.opcode] ?? ErrorCode.INTERNAL, seq: header.seq };
    this.wake(link);
  }

  private deliver(link: Link, frame: Frame): void {
    // A receiver that started waiting while this frame was arriving takes it now.
    const receiver = link.waiting.get(frame.header.channel);
    if (receiver !== undefined && (link.inbox.get(frame.header.channel)?.length ?? 0) === 0) {
      link.waiting.delete(frame.header.channel);
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
    for (const wake of [...link.wakers]) wake();
  }

  /** Waits for `ready` on a link, ending on the link's failure or the context's verdict. */
  private async waitFor(link: Link, ready: () => boolean, ctx: WaitContext): Promise<void> {
    while (!ready()) {
      if (link.error !== undefined) throw link.error;
      ctx.check();
      await new Promise<void>((resolve) => {
        const timer = setTimeout(done, ctx.sliceMs());
        function done() { clearTimeout(timer); link.wakers.delete(done); resolve(); }
        link.wakers.add(done);
      });
    }
  }
}

/** Accepts the connections of every higher rank; anything else is refused and logged. */
function acceptPeers(server: Server, options: TcpTransportOptions, commId: number, sockets: Map<number, Socket>): Promise<void> {
  const expected = options.nranks - 1 - options.rank;
  return new Promise<void>((resolve, reject) => {
    if (expected === 0) return resolve();
    const timer = setTimeout(() => reject(new TscclError(ErrorCode.TIMEOUT,
      `Rank ${options.rank} timed out after ${options.timeoutMs} ms waiting for ranks ${Array.from({ length: options.nranks }, (_, r) => r).filter((r) => r > options.rank && !sockets.has(r)).join(', ')} to connect`,
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
      readExactly(socket, HELLO_BYTES, options.timeoutMs).then((hello) => {
        const mac = hello.subarray(0, 32);
        const peer = hello.readUInt32LE(32);
        const ok = options.token === undefined ? Buffer.from(mac).equals(NO_TOKEN_MAC) : checkProof(options.token, PURPOSE, nonce, mac);
        if (!ok) return refuse('wrong job token');
        if (hello.readUInt32LE(36) !== commId) return refuse('it belongs to another communicator');
        if (peer <= options.rank || peer >= options.nranks || sockets.has(peer)) return refuse(`unexpected rank ${peer}`);
        socket.write(Buffer.of(1));
        sockets.set(peer, socket);
        // The map also holds the sockets this rank dialed (to lower ranks): count only accepted ones.
        if ([...sockets.keys()].filter((r) => r > options.rank).length === expected) { clearTimeout(timer); resolve(); }
      }, (err: Error) => refuse(err.message));
    });
  });
}

async function dialPeer(host: string, port: number, options: TcpTransportOptions, commId: number, peer: number): Promise<Socket> {
  const socket = connect({ host, port });
  socket.setNoDelay(true);
  await new Promise<void>((resolve, reject) => {
    socket.once('connect', resolve);
    socket.once('error', (err) => reject(new TscclError(ErrorCode.PEER_LOST, `Rank ${options.rank} cannot connect to rank ${peer} at ${host}:${port}: ${err.message}`, { rank: options.rank, peer })));
  });
  const greeting = await readExactly(socket, GREETING_BYTES, options.timeoutMs);
  if (greeting.toString('latin1', 0, 4) !== HANDSHAKE_MAGIC) throw new TscclError(ErrorCode.PEER_LOST, `${host}:${port} is not a tsccl rank`, { peer });
  if (greeting.readUInt8(5) === 1 && options.token === undefined) {
    throw new TscclError(ErrorCode.INVALID_ARGUMENT, `Rank ${peer} requires the job token: set TSCCL_JOB_TOKEN`, { rank: options.rank, peer });
  }
  const hello = Buffer.alloc(HELLO_BYTES);
  hello.set(options.token === undefined ? NO_TOKEN_MAC : proveToken(options.token, PURPOSE, greeting.subarray(6, 22)), 0);
  hello.writeUInt32LE(options.rank, 32);
  hello.writeUInt32LE(commId, 36);
  socket.write(hello);
  const answer = await readExactly(socket, 1, options.timeoutMs).catch(() => Buffer.of(0));
  if (answer[0] !== 1) throw new TscclError(ErrorCode.INVALID_ARGUMENT, `Rank ${peer} refused rank ${options.rank}'s connection (wrong job token or communicator)`, { rank: options.rank, peer });
  return socket;
}

/** Reads exactly n bytes during a handshake, then hands the socket back untouched. */
function readExactly(socket: Socket, n: number, timeoutMs: number): Promise<Buffer> {
  return new Promise<Buffer>((resolve, reject) => {
    let got = Buffer.alloc(0);
    const timer = setTimeout(() => finish(new Error(`handshake timed out after ${timeoutMs} ms`)), timeoutMs);
    const onData = (chunk: Buffer) => {
      got = Buffer.concat([got, chunk]);
      if (got.byteLength >= n) {
        finish(undefined, got.subarray(0, n));
        // Bytes past the handshake (a peer may send its first frame at once) go back to the
        // stream, after this listener is gone so they are not read twice.
        if (got.byteLength > n) socket.unshift(got.subarray(n));
      }
    };
    const onClose = () => finish(new Error('connection closed during handshake'));
    function finish(err?: Error, value?: Buffer) {
      clearTimeout(timer);
      socket.off('data', onData);
      socket.off('close', onClose);
      socket.pause();
      if (err) reject(err); else resolve(value!);
    }
    socket.on('data', onData);
    socket.on('close', onClose);
    socket.resume();
  });
}

/**
 * Feeds a waiting receiver as the bytes come. Pieces handed on are whole elements at aligned
 * addresses (a reduction views them as typed arrays); a partial element waits for the next
 * piece, and a piece at an odd address is copied once to an aligned one.
 */
function streamingSink(receiver: WaitingRecv, finished: () => void): FrameSink {
  const e = receiver.elementBytes;
  const carry = new Uint8Array(e);
  let carried = 0;
  let offset = 0;
  const hand = (piece: Uint8Array) => {
    if (receiver.cancelled || piece.byteLength === 0) return;
    const aligned = piece.byteOffset % e === 0 ? piece : new Uint8Array(piece);
    receiver.consume(aligned, offset);
    offset += piece.byteLength;
  };
  return {
    payload: (piece) => {
      let at = 0;
      if (carried > 0) {
        const take = Math.min(e - carried, piece.byteLength);
        carry.set(piece.subarray(0, take), carried);
        carried += take;
        at = take;
        if (carried < e) return;
        hand(carry.slice());
        carried = 0;
      }
      const whole = Math.floor((piece.byteLength - at) / e) * e;
      hand(piece.subarray(at, at + whole));
      const rest = piece.subarray(at + whole);
      carry.set(rest, 0);
      carried = rest.byteLength;
    },
    end: finished,
  };
}
