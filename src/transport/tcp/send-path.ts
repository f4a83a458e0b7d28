import type { Socket } from 'node:net';
import { crc32 } from '../../kernels/crc32.js';
import type { MessageTag } from '../transport.js';
import {
  FLAG_CHECKSUM,
  FLAG_STRIPE,
  type FrameHeader,
  type MutableFrameHeader,
  HEADER_BYTES,
  blankHeader,
  encodeFrame,
  encodeFrameInto,
  encodeHeader,
} from './frame.js';
import type { PeerLink } from './peer-link.js';
import type { ReceiveDispatch } from './receive-dispatch.js';
import { stripes } from './striping.js';
import { COPY_FRAME_MAX_BYTES, STRIPE_MIN_BYTES } from './tcp-tunables.js';

/**
 * Whether a frame carries a CRC32: as the call (or TSCCL_CHECKSUM, or the transport's option)
 * says, else only to a peer on another machine. A wire, a NIC and its offloads can corrupt data
 * that TCP's 16-bit checksum lets through; between processes of one machine the bytes only move
 * between memory buffers, as between thread ranks, where checksums are off by default too.
 */
export function checksumsFrame(choice: boolean | undefined, sameMachine: boolean): boolean {
  return choice ?? !sameMachine;
}

/** One send to a peer over the network, as a test's send hook sees it. */
export interface OutgoingFrame {
  /** Identifies the sending transport (a process may have several). */
  readonly sender: object;
  /** The sending rank, in the sending transport's communicator. */
  readonly rank: number;
  readonly peer: number;
  /** The socket an unstriped frame to the peer goes on. */
  readonly socket: Socket;
  readonly data: Uint8Array;
  /** The header the send would write for `data` as one unstriped frame (checksum of the true data if it carries one). */
  header(): Buffer;
  /** Marks the send as taken by the socket and ends waits on it: call once its bytes are written. */
  delivered(): void;
}

/** Sees every send to another process; true if it wrote (or broke) the frame itself, false to let the send go on. */
export type SendHookForTests = (frame: OutgoingFrame) => boolean;

let sendHook: SendHookForTests | undefined;

/**
 * Installs (or, with undefined, removes) a hook on every TCP send of this thread: the seam tests
 * inject faults through (test/harness/frame-faults.ts). Unset, a send pays one comparison.
 */
export function setSendHookForTests(hook: SendHookForTests | undefined): void {
  sendHook = hook;
}

/**
 * Writes messages as frames. A send writes header and payload straight from the caller's memory
 * and counts as delivered when the socket has taken it, after which the buffer may be reused; a
 * message of up to COPY_FRAME_MAX_BYTES is copied into its frame, so it is delivered at once; one
 * of STRIPE_MIN_BYTES or more with several sockets per peer is striped across them. A message to
 * oneself goes straight to the receive side. With resend on, a checksummed frame is kept until
 * the peer acknowledges it (RetainedFrames): a copied frame as it is, a larger one as a reference
 * to the caller's memory.
 */
export class SendPath {
  private readonly rank: number;
  private readonly commId: number;
  private readonly checksum: boolean | undefined;
  private readonly dispatch: ReceiveDispatch;
  /** Checksummed frames are kept for resend (TSCCL_RESEND_RETRIES > 0). */
  private readonly resend: boolean;
  /** The header of every frame this path writes, refilled per frame: encoded at once and kept by nobody. */
  private readonly scratchHeader = blankHeader();
  /** Where a copied frame that is not kept for resend is encoded, refilled per send. */
  private readonly copiedFrame = Buffer.allocUnsafe(HEADER_BYTES + COPY_FRAME_MAX_BYTES);

  constructor(
    dispatch: ReceiveDispatch,
    self: { rank: number; commId: number; checksum: boolean | undefined; resend: boolean },
  ) {
    this.dispatch = dispatch;
    this.rank = self.rank;
    this.commId = self.commId;
    this.checksum = self.checksum;
    this.resend = self.resend;
  }

  /** Sends a message on the link (which must be up); its ticket, delivered when link.written reaches it. */
  send(link: PeerLink, channel: number, data: Uint8Array, tag: MessageTag): number {
    const ticket = ++link.posted;
    if (link.connections.length === 0) {
      // The receive side may keep this header (a frame nobody waits for yet): an object of its own.
      const sink = this.dispatch.open(link, this.header(channel, tag, data, 0, 0, blankHeader()))!;
      sink.payload(data);
      sink.end();
      link.finish(ticket);
      return ticket;
    }
    const sum = checksumsFrame(tag.checksum ?? this.checksum, link.sameMachine);
    const keep = sum && this.resend;
    if (sendHook?.(this.outgoing(link, channel, data, tag, ticket, sum))) {
      // The hook wrote one frame on socket 0 (perhaps broken): a copy of what it should have been
      // is kept as the send would have kept it, a small one in the window, a large one by reference.
      const number = link.retained.next(0);
      if (keep) {
        const copy = new Uint8Array(data);
        const checksum = copy.byteLength <= COPY_FRAME_MAX_BYTES ? undefined : crc32(copy);
        link.retained.keep(0, {
          number,
          header: this.outgoingHeader(channel, tag, data, sum),
          payload: copy,
          checksum,
        });
      }
      return ticket;
    }
    if (data.byteLength <= COPY_FRAME_MAX_BYTES) {
      // The frame is a copy, so the caller's memory is free at once: no wait for the write.
      const header = this.header(channel, tag, data, sum ? crc32(data) : 0, sum ? FLAG_CHECKSUM : 0);
      // A frame kept for resend needs memory of its own; any other is encoded in memory every
      // such send reuses, and what the kernel does not take at once is copied.
      if (!keep) {
        link.writeCopied(0, this.copiedFrame, encodeFrameInto(header, data, this.copiedFrame));
        link.finish(ticket);
        return ticket;
      }
      const frame = encodeFrame(header, data);
      const number = link.writeFrame(0, [frame]);
      link.retained.keep(0, {
        number,
        header: frame.subarray(0, HEADER_BYTES),
        payload: frame.subarray(HEADER_BYTES),
        checksum: undefined,
      });
      link.finish(ticket);
      return ticket;
    }
    this.sendInParts(link, channel, data, tag, { ticket, sum, keep });
    return ticket;
  }

  /**
   * A message larger than a copied frame, written from the caller's memory, striped where it may
   * be: a method of its own, as its closures made send allocate their context on every call.
   */
  private sendInParts(
    link: PeerLink,
    channel: number,
    data: Uint8Array,
    tag: MessageTag,
    send: { ticket: number; sum: boolean; keep: boolean },
  ): void {
    const { ticket, sum, keep } = send;
    const parts =
      link.connections.length > 1 && data.byteLength >= STRIPE_MIN_BYTES
        ? stripes(data.byteLength, link.connections.length)
        : [[0, data.byteLength]];
    let unfinished = parts.length;
    const written = (err: Error | null | undefined) => {
      if (!err && --unfinished === 0) link.finish(ticket);
      link.wake();
    };
    const flags = (parts.length > 1 ? FLAG_STRIPE : 0) | (sum ? FLAG_CHECKSUM : 0);
    parts.forEach(([start, end], lane) => {
      const part = data.subarray(start, end);
      const checksum = sum ? crc32(part) : 0;
      const header = encodeHeader(this.header(channel, tag, part, checksum, flags));
      const number = link.writeFrame(lane, [header, part], written);
      if (keep) link.retained.keep(lane, { number, header, payload: part, checksum });
    });
  }

  /**
   * The header of a frame of `data`, filled `into` the one object every encoded frame refills
   * (each is encoded before the next send: an object per frame was garbage), unless one is given.
   */
  private header(
    channel: number,
    tag: MessageTag,
    data: Uint8Array,
    checksum: number,
    extraFlags: number,
    into: MutableFrameHeader = this.scratchHeader,
  ): FrameHeader {
    into.flags = extraFlags;
    into.channel = channel;
    into.commId = this.commId;
    into.seq = tag.seq;
    into.opcode = tag.opcode;
    into.length = data.byteLength;
    into.checksum = checksum;
    return into;
  }

  /** The header of `data` sent as one unstriped frame. */
  private outgoingHeader(channel: number, tag: MessageTag, data: Uint8Array, sum: boolean): Buffer {
    return encodeHeader(this.header(channel, tag, data, sum ? crc32(data) : 0, sum ? FLAG_CHECKSUM : 0));
  }

  private outgoing(
    link: PeerLink,
    channel: number,
    data: Uint8Array,
    tag: MessageTag,
    ticket: number,
    sum: boolean,
  ): OutgoingFrame {
    return {
      sender: this,
      rank: this.rank,
      peer: link.peer,
      socket: link.connections[0].socket,
      data,
      header: () => this.outgoingHeader(channel, tag, data, sum),
      delivered: () => {
        link.finish(ticket);
        link.wake();
      },
    };
  }
}
