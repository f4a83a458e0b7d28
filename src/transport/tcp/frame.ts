import { ErrorCode, TscclError } from '../../errors.js';
import type { Crc32 } from '../../kernels/crc32.js';

/**
 * A data frame on a TCP link: a 32-byte header (little-endian), then `length` payload bytes.
 *
 *   0  u32 magic 0x4C435354 ("TSCL" in memory order)   16  u32 seq
 *   4  u8  version                                       20  u32 opcode
 *   5  u8  flags (see the FLAG_ constants)              24  u32 length, low 32 bits
 *   6  u16 channel                                      28  u32 checksum
 *   8  u32 communicator id      12 u32 length, high 32 bits
 *
 * Striping: with K sockets per peer, a message of STRIPE_MIN_BYTES or more is cut into K parts
 * at 64-byte boundaries and part i is a flagged frame on socket i (same channel, seq, opcode).
 * Socket 0 also carries every unstriped frame, so its order is the message order; the j-th
 * stripe frame of a channel on any socket is part of that channel's j-th striped message.
 *
 * Frames on a socket are numbered from 1 in the order written, by both ends: the number names a
 * frame in the link layer's acknowledgements and resend requests (link-frames.ts).
 *
 * The parser is a state machine fed arbitrary chunks: it never trusts a length past
 * maxPayloadBytes, rejects a bad magic or version at once, and checks the CRC when flagged.
 */
export const FRAME_MAGIC = 0x4c435354;
/** 2: frames are numbered and acknowledged, and a corrupted one is sent again (link-frames.ts). */
export const FRAME_VERSION = 2;
export const HEADER_BYTES = 32;
/** The checksum field holds the payload's CRC32. */
export const FLAG_CHECKSUM = 1;
/** The frame is one part of a message striped across the sockets to a peer (TSCCL_NSOCKS_PERPEER). */
export const FLAG_STRIPE = 2;
/** A link-layer frame (acknowledgement, resend request, resent frame): its opcode is a LINK_OPCODES value. */
export const FLAG_LINK = 4;

export interface FrameHeader {
  readonly flags: number;
  readonly channel: number;
  readonly commId: number;
  readonly seq: number;
  readonly opcode: number;
  readonly length: number;
  readonly checksum: number;
}

/** A header filled in place: a send's scratch header, or a received one that carries a later frame (ReceiveDispatch.recycle). */
export type MutableFrameHeader = { -readonly [K in keyof FrameHeader]: FrameHeader[K] };

/**
 * A header to fill, its keys in FrameHeader's order: every header sent or decoded has one shape.
 * The 32-bit unsigned fields and the length start as -0, a number V8 stores as a double: values
 * of 2^31 and more (most checksums, half the communicator ids) are not small integers, and a
 * field that changed from small integers to doubles gave later headers a new shape, on which
 * the send path's compiled code, made for the old one, was thrown away (docs/tuning.md, "Arrays
 * of one kind").
 */
export const blankHeader = (): MutableFrameHeader => ({
  flags: 0,
  channel: 0,
  commId: -0,
  seq: 0,
  opcode: -0,
  length: -0,
  checksum: -0,
});

/** Where a parser takes header objects to decode into, where some are free again. */
export interface SpareHeaders {
  spareHeader(): MutableFrameHeader | undefined;
}

/** Writes the header's 32 bytes at the start of `b` (a fresh buffer if none is given). */
export function encodeHeader(h: FrameHeader, b: Buffer = Buffer.allocUnsafe(HEADER_BYTES)): Buffer {
  if (h.flags > 0xff || h.channel > 0xffff || h.channel < 0)
    throw new RangeError(`frame flags ${h.flags} or channel ${h.channel} do not fit the header`);
  putU32(b, 0, FRAME_MAGIC);
  b[4] = FRAME_VERSION;
  b[5] = h.flags;
  b[6] = h.channel & 0xff;
  b[7] = (h.channel >>> 8) & 0xff;
  putU32(b, 8, h.commId);
  putU32(b, 12, Math.floor(h.length / 2 ** 32));
  putU32(b, 16, h.seq);
  putU32(b, 20, h.opcode);
  putU32(b, 24, h.length);
  putU32(b, 28, h.checksum);
  return b;
}

/**
 * The header's words byte by byte, little-endian: Buffer's writeUInt32LE and readUInt32LE check
 * their arguments on every call, and a frame's header is written and read on every small message.
 */
function putU32(b: Uint8Array, at: number, value: number): void {
  b[at] = value & 0xff;
  b[at + 1] = (value >>> 8) & 0xff;
  b[at + 2] = (value >>> 16) & 0xff;
  b[at + 3] = (value >>> 24) & 0xff;
}

/** Copies up to this many bytes one by one (copyBytes): a `set` or Buffer's `copy` makes a view per call. */
export const BYTEWISE_COPY_MAX = 64;

/**
 * Copies `length` bytes of `from` at `at` into `into` at `to`, byte by byte where they are at
 * most BYTEWISE_COPY_MAX (a small message's path makes no view), else with one `set`.
 */
export function copyBytes(into: Uint8Array, to: number, from: Uint8Array, at: number, length: number): void {
  if (length > BYTEWISE_COPY_MAX) {
    into.set(from.subarray(at, at + length), to);
    return;
  }
  for (let i = 0; i < length; i++) into[to + i] = from[at + i];
}

/** The little-endian u32 at `at` of `b`. */
export function u32(b: Uint8Array, at: number): number {
  return (b[at] | (b[at + 1] << 8) | (b[at + 2] << 16) | (b[at + 3] << 24)) >>> 0;
}

/** A whole frame in a buffer of its own: the header, then a copy of the payload. */
export function encodeFrame(h: FrameHeader, payload: Uint8Array): Buffer {
  const b = Buffer.allocUnsafe(HEADER_BYTES + payload.byteLength);
  encodeFrameInto(h, payload, b);
  return b;
}

/**
 * A whole frame at the start of `into` (reused memory): the header, then a copy of the payload;
 * its length. No view of it is made, as a small call sends one such frame per peer.
 */
export function encodeFrameInto(h: FrameHeader, payload: Uint8Array, into: Uint8Array): number {
  const bytes = HEADER_BYTES + payload.byteLength;
  if (bytes > into.byteLength) throw new RangeError(`a frame of ${bytes} bytes does not fit ${into.byteLength}`);
  encodeHeader(h, into as Buffer);
  into.set(payload, HEADER_BYTES);
  return bytes;
}

export function frameError(message: string): TscclError {
  return new TscclError(ErrorCode.MISMATCH, `TCP frame error: ${message}`, { op: 'transport' });
}

export function decodeHeader(b: Uint8Array, maxPayloadBytes: number, into?: MutableFrameHeader): FrameHeader {
  const magic = u32(b, 0);
  if (magic !== FRAME_MAGIC)
    throw frameError(`bad magic 0x${magic.toString(16)} (not a tsccl peer, or the stream lost its place)`);
  const version = b[4];
  if (version !== FRAME_VERSION) throw frameError(`frame version ${version}, expected ${FRAME_VERSION}`);
  const length = u32(b, 12) * 2 ** 32 + u32(b, 24);
  if (length > maxPayloadBytes) throw frameError(`frame of ${length} bytes exceeds the limit of ${maxPayloadBytes}`);
  const header = into ?? blankHeader();
  header.flags = b[5];
  header.channel = b[6] | (b[7] << 8);
  header.commId = u32(b, 8);
  header.seq = u32(b, 16) | 0;
  header.opcode = u32(b, 20);
  header.length = length;
  header.checksum = u32(b, 28);
  return header;
}

export interface Frame {
  readonly header: FrameHeader;
  readonly payload: Buffer;
}

/** Where a frame's payload goes as it arrives: a waiting receiver, or a buffer for later. */
export interface FrameSink {
  payload(piece: Uint8Array): void;
  /**
   * payload of `chunk`'s `length` bytes from `at`, where the sink takes them without a view of
   * its own (a whole small frame per read would otherwise make one per frame).
   */
  payloadAt?(chunk: Uint8Array, at: number, length: number): void;
  /** Where the next at most `bytes` payload bytes may be read to, if the sink has a place for them. */
  place?(bytes: number): Uint8Array | undefined;
  /** All payload bytes arrived and the checksum (if any) matched. */
  end(): void;
  /** Forgets the payload taken so far, to take it again from its first byte (a resent frame); absent where that is impossible. */
  restart?(): void;
}

/** A frame whose payload had begun to stream into its sink. */
export interface OpenFrame {
  readonly header: FrameHeader;
  readonly sink: FrameSink;
}

/** Where a socket's stream broke: the first frame a new socket must carry, and the frame begun if any. */
export interface BreakPoint {
  readonly from: number;
  readonly open: OpenFrame | undefined;
}

/** What a reader does with each frame's checksum outcome. */
export interface FrameChecks {
  /** Frame `number`'s payload failed its CRC: true if it will come again into `sink` (kept unended), false to fail the stream. */
  corrupt(number: number, header: FrameHeader, sink: FrameSink): boolean;
  /** Frame `number` ended intact; called before its sink's end(). */
  intact(number: number, header: FrameHeader): void;
}

/** What a FrameParser checks and where it starts, besides the largest payload it accepts. */
export interface FrameParserOptions {
  /** Checks the payload of frames flagged FLAG_CHECKSUM; without it no checksum is checked. */
  readonly crc32?: Crc32;
  /** Told of each frame's end, intact or corrupted (resend.ts): a corrupted one it will have again is no error. */
  readonly checks?: FrameChecks;
  /**
   * This parser reads a socket that replaces a broken one, whose frames it goes on numbering
   * from `from` (the broken parser's breakPoint); the first frame's payload goes to the sink it
   * had begun to fill, which was restarted.
   */
  readonly resume?: BreakPoint;
  /** Where header objects free again are, decoded into instead of making one per frame. */
  readonly spares?: SpareHeaders;
}

/** A sink that collects the payload and hands over the whole frame at the end. */
export function bufferingSink(header: FrameHeader, done: (frame: Frame) => void): FrameSink {
  const payload = Buffer.allocUnsafe(header.length);
  let filled = 0;
  return {
    payload: (piece) => {
      payload.set(piece, filled);
      filled += piece.byteLength;
    },
    end: () => done({ header, payload }),
    restart: () => {
      filled = 0;
    },
  };
}

export class FrameParser {
  private header: FrameHeader | undefined;
  private readonly headerBytes = Buffer.alloc(HEADER_BYTES);
  private headerFill = 0;
  private sink: FrameSink | undefined;
  // The byte counts and the checksum start as -0, a double: they take a header's length (a double
  // field) and 32-bit checksums, and a field turned from small integers to doubles left every
  // parser made before it on an outdated shape (docs/tuning.md, "Arrays of one kind").
  /** The payload bytes of the frame that ended last (0 before any). */
  private endedBytes = -0;
  private remaining = -0;
  private crc = -0;
  private readonly maxPayloadBytes: number;
  private readonly crc32: Crc32 | undefined;
  private readonly checks: FrameChecks | undefined;
  /** Frames whose header was read: the number of the current (or last) frame. */
  private frames = 0;

  /** The frame a reconnected socket carries first, whose payload had begun on the socket it replaces. */
  private resumed: OpenFrame | undefined;
  /** Header objects free again, decoded into instead of making one per frame. */
  private readonly spares: SpareHeaders | undefined;

  constructor(maxPayloadBytes: number, options: FrameParserOptions = {}) {
    this.maxPayloadBytes = maxPayloadBytes;
    this.spares = options.spares;
    this.crc32 = options.crc32;
    this.checks = options.checks;
    if (options.resume !== undefined) {
      this.frames = options.resume.from - 1;
      this.resumed = options.resume.open;
    }
  }

  /**
   * Where the stream stands if its socket breaks now: the number of the first frame a new socket
   * must carry (the one begun, or the next), and the begun frame's sink, if its payload had begun
   * to stream into one.
   */
  get breakPoint(): BreakPoint {
    // A socket that broke again before its first frame's header came still owes that frame to
    // the sink begun on the socket before it.
    if (this.header === undefined) return { from: this.frames + 1, open: this.resumed };
    return {
      from: this.frames,
      open: this.sink === undefined ? undefined : { header: this.header, sink: this.sink },
    };
  }

  /** The sink the next payload bytes stream into, and how many bytes of its frame are still to come. */
  get current(): { sink: FrameSink; left: number } | undefined {
    return this.sink === undefined ? undefined : { sink: this.sink, left: this.remaining };
  }

  /** The payload bytes of the data or control frame that ended last (link frames aside), 0 before any. */
  get previousBytes(): number {
    // + 0 turns the field's first value, -0, into 0.
    return this.endedBytes + 0;
  }

  /** Between frames: how many bytes of the next header are still to come (0 inside a frame). */
  get headerLeft(): number {
    return this.header === undefined ? HEADER_BYTES - this.headerFill : 0;
  }

  /** A header was read whose sink `open` did not name yet: push again to retry it. */
  get stalled(): boolean {
    return this.header !== undefined && this.sink === undefined;
  }

  /**
   * Feeds bytes and returns how many it consumed. For each header, `open` names the sink its
   * payload streams into, piece by piece as the bytes come (no whole-frame copy when a receiver
   * is already waiting). If `open` names none yet, the parser stops right after that header and
   * returns; the caller pushes the rest later, and `open` is asked again first. Throws on a
   * malformed frame, and on a checksum mismatch before the sink's end().
   */
  push(chunk: Uint8Array, open: (header: FrameHeader) => FrameSink | undefined): number {
    let at = 0;
    for (;;) {
      if (this.header === undefined) {
        if (at >= chunk.byteLength) return at;
        const take = Math.min(HEADER_BYTES - this.headerFill, chunk.byteLength - at);
        // Byte by byte: a view of the chunk per header would be garbage on every frame.
        for (let i = 0; i < take; i++) this.headerBytes[this.headerFill + i] = chunk[at + i];
        this.headerFill += take;
        at += take;
        if (this.headerFill < HEADER_BYTES) return at;
        this.header = decodeHeader(this.headerBytes, this.maxPayloadBytes, this.spares?.spareHeader());
        this.frames++;
        this.headerFill = 0;
        this.remaining = this.header.length;
        this.crc = 0;
        if (this.resumed !== undefined) this.sink = this.takeResumed(this.header);
      }
      if (this.sink === undefined) {
        this.sink = open(this.header);
        if (this.sink === undefined) return at;
      }
      const take = Math.min(this.remaining, chunk.byteLength - at);
      if (take > 0) {
        const summed = this.header.flags & FLAG_CHECKSUM && this.crc32 !== undefined;
        if (!summed && this.sink.payloadAt !== undefined) this.sink.payloadAt(chunk, at, take);
        else {
          const piece = chunk.subarray(at, at + take);
          if (summed) this.crc = this.crc32!(piece, this.crc);
          this.sink.payload(piece);
        }
        this.remaining -= take;
        at += take;
      }
      if (this.remaining > 0) return at;
      const header = this.header;
      const sink = this.sink;
      this.header = undefined;
      this.sink = undefined;
      // A link frame between two data frames must not stop the next one's header being read alone.
      if (!(header.flags & FLAG_LINK)) this.endedBytes = header.length;
      if (header.flags & FLAG_CHECKSUM && this.crc32 !== undefined && this.crc >>> 0 !== header.checksum) {
        if (this.checks?.corrupt(this.frames, header, sink)) continue;
        throw new TscclError(
          ErrorCode.CHECKSUM,
          `TCP frame checksum mismatch on channel ${header.channel} seq ${header.seq} (${header.length} bytes): the data was corrupted on the way`,
          { op: 'transport', seq: header.seq },
        );
      }
      this.checks?.intact(this.frames, header);
      sink.end();
    }
  }

  /** The begun frame's sink, for the same frame carried again first on a reconnected socket. */
  private takeResumed(header: FrameHeader): FrameSink {
    const open = this.resumed!;
    this.resumed = undefined;
    const was = open.header;
    if (
      header.length !== was.length ||
      header.channel !== was.channel ||
      header.seq !== was.seq ||
      header.opcode !== was.opcode ||
      header.flags !== was.flags ||
      header.checksum !== was.checksum
    )
      throw frameError(
        `the reconnected socket's first frame (channel ${header.channel}, seq ${header.seq}, ${header.length} bytes) is not the one it broke in (channel ${was.channel}, seq ${was.seq}, ${was.length} bytes)`,
      );
    return open.sink;
  }
}
