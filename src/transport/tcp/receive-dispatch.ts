import { anyValueArray } from '../../any-value-array.js';
import type { TscclError } from '../../errors.js';
import { CONTROL_CHANNEL } from '../channels.js';
import { type MessageTag, messageMismatch } from '../transport.js';
import type { ControlChannel } from './control-channel.js';
import {
  FLAG_CHECKSUM,
  FLAG_LINK,
  FLAG_STRIPE,
  type Frame,
  type FrameHeader,
  type FrameSink,
  type MutableFrameHeader,
  type SpareHeaders,
  bufferingSink,
  copyBytes,
} from './frame.js';
import type { PeerLink, Slot, WaitingRecv } from './peer-link.js';
import { type ReceiveBuffers, stagedSink, streamingSink } from './receive-sink.js';
import type { Resend } from './resend.js';
import { openStripe } from './striping.js';
import { HOLD_MIN_BYTES } from './tcp-tunables.js';

/**
 * Inbox frames kept for reuse once read (recycle): the one-shot path reads one frame per peer a
 * call, so this covers a call of 17 ranks; more are left to the collector.
 */
const SPARE_FRAMES = 16;

/**
 * Where each arriving frame goes: a control frame to the control channel, a stripe to its
 * assembly, a data frame into the receive waiting for it (streamed, see streamingSink) or else
 * into its channel's inbox, whole, in order. A received frame is checked against its receive
 * (length, seq, opcode, communicator) before a byte is handed over. With resend on, a
 * checksummed frame that a reduction takes is read whole into staging memory and reduced once
 * intact (stagedSink): a reduction cannot take back bytes that turn out corrupted, as a copy can
 * be overwritten.
 */
export class ReceiveDispatch implements SpareHeaders {
  private readonly rank: number;
  private readonly commId: number;
  private readonly buffers: ReceiveBuffers;
  private readonly control: ControlChannel;
  private readonly resend: Resend;
  /** Inbox frames whose reader is done with them, and their headers: a later frame's, not garbage. */
  private readonly spareFrames = anyValueArray<InboxSink>();
  private readonly spareHeaders = anyValueArray<MutableFrameHeader>();

  constructor(
    control: ControlChannel,
    resend: Resend,
    self: { rank: number; commId: number; buffers: ReceiveBuffers },
  ) {
    this.control = control;
    this.resend = resend;
    this.rank = self.rank;
    this.commId = self.commId;
    this.buffers = self.buffers;
  }

  /**
   * Where an arriving frame's payload goes: the receiver waiting for it, else the inbox; or, if
   * `patient`, nowhere yet (undefined): the frame waits in the socket for its receiver (hold.ts).
   */
  open(link: PeerLink, header: FrameHeader, lane = 0, patient = false): FrameSink | undefined {
    // No closure is made here but in the methods each case calls: V8 gives a function whose
    // closures capture its variables a context on every call, whichever branch runs, and most
    // small frames take the inbox's branch, which needs none.
    if (header.flags & FLAG_LINK || header.channel === CONTROL_CHANNEL) return this.linkOrControlSink(link, header);
    if (lane > 0 || header.flags & FLAG_STRIPE) return openStripe(link, header, lane, this);
    if (header.channel === 0) link.heardSeq(header.seq);
    const ordered = link.ordered.get(header.channel);
    // A striped message before this one is still assembling: keep the order.
    if (ordered !== undefined && ordered.length > 0) return this.orderedSink(link, header, ordered);
    const receiver = link.waiting[header.channel];
    if (receiver === undefined)
      return patient && header.length >= HOLD_MIN_BYTES && !link.awaitingResend
        ? undefined
        : this.inboxSink(link, header);
    link.waiting[header.channel] = undefined;
    return this.receiverSink(link, header, receiver);
  }

  /** A link frame to the resend layer, a control frame to the control channel, each whole. */
  private linkOrControlSink(link: PeerLink, header: FrameHeader): FrameSink {
    if (header.flags & FLAG_LINK) return bufferingSink(header, (frame) => this.resend.receive(link, frame));
    return bufferingSink(header, (frame) => this.control.receive(link, frame));
  }

  /** A frame behind a striped message still assembling: collected whole, handed over in its place. */
  private orderedSink(link: PeerLink, header: FrameHeader, ordered: Slot[]): FrameSink {
    const slot: Slot = { frame: undefined };
    ordered.push(slot);
    return bufferingSink(header, (frame) => {
      slot.frame = frame;
      this.flush(link, header.channel);
    });
  }

  /** The frame of a receive that waits for it, checked against it first. */
  private receiverSink(link: PeerLink, header: FrameHeader, receiver: WaitingRecv): FrameSink {
    try {
      this.checkMatch(link, header, receiver.bytes, receiver.tag);
    } catch (err) {
      receiver.error = err as TscclError;
      receiver.done = true;
      link.wake();
      return { payload: () => {}, end: () => {}, restart: () => {} };
    }
    const finished = (err?: unknown) => {
      if (err !== undefined) receiver.error = err as TscclError;
      receiver.done = true;
      link.wake();
    };
    if (header.flags & FLAG_CHECKSUM && this.resend.retries > 0 && receiver.consume.into === undefined)
      return stagedSink(receiver, header.length, this.buffers.staging, finished);
    return streamingSink(receiver, this.buffers, finished);
  }

  /** A frame nobody waits for yet, bound for its channel's inbox (InboxSink). */
  private inboxSink(link: PeerLink, header: FrameHeader): FrameSink {
    const spare = this.spareFrames.pop();
    if (spare === undefined) return new InboxSink(this, link, header);
    spare.carry(link, header);
    return spare;
  }

  /**
   * `frame`, taken out of its inbox, is read and referred to no more: its objects and payload
   * memory carry later frames. Only a frame that came whole at once is reused: one that failed its
   * checksum is also known to the resend layer.
   */
  recycle(frame: Frame): void {
    if (!(frame instanceof InboxFrame)) return;
    const sink = frame.sink;
    if (!sink.reusable || this.spareFrames.length >= SPARE_FRAMES) return;
    this.spareHeaders.push(frame.header as MutableFrameHeader);
    this.spareFrames.push(sink);
  }

  spareHeader(): MutableFrameHeader | undefined {
    return this.spareHeaders.pop();
  }

  /** An inbox frame that arrived whole: handed over now, or in its place in the channel's order. */
  inboxFrame(link: PeerLink, frame: Frame, slot: Slot | undefined): void {
    if (slot === undefined) {
      this.deliver(link, frame);
      return;
    }
    slot.frame = frame;
    this.flush(link, frame.header.channel);
  }

  /** Hands over, in order, the messages of a channel whose parts have all arrived. */
  flush(link: PeerLink, channel: number): void {
    const ordered = link.ordered.get(channel)!;
    while (ordered.length > 0 && ordered[0].frame !== undefined) this.deliver(link, ordered.shift()!.frame!);
  }

  /** Throws the mismatch if a frame is not the message a receive expects. */
  checkMatch(link: PeerLink, h: FrameHeader, bytes: number, tag: MessageTag): void {
    if (h.length !== bytes || h.seq !== tag.seq || h.opcode !== tag.opcode || h.commId !== this.commId) {
      throw messageMismatch(
        this.rank,
        link.peer,
        { opcode: tag.opcode, seq: tag.seq, bytes },
        { opcode: h.opcode, seq: h.seq, bytes: h.length },
        h.commId !== this.commId ? ' on another communicator' : '',
      );
    }
  }

  /** A whole frame: to the receiver that started waiting while it was arriving, else to its inbox. */
  private deliver(link: PeerLink, frame: Frame): void {
    const receiver = link.waiting[frame.header.channel];
    if (receiver !== undefined && !link.hasMessage(frame.header.channel)) {
      link.waiting[frame.header.channel] = undefined;
      try {
        this.checkMatch(link, frame.header, receiver.bytes, receiver.tag);
        if (receiver.bytes > 0 && !receiver.cancelled) receiver.consume(frame.payload, 0);
      } catch (err) {
        receiver.error = err as TscclError;
      }
      receiver.done = true;
      link.wake();
      return;
    }
    let queue = link.inbox.get(frame.header.channel);
    if (queue === undefined) link.inbox.set(frame.header.channel, (queue = []));
    queue.push(frame);
    link.wake();
  }
}

/** An inbox frame, and the sink that filled it: both used again together (ReceiveDispatch.recycle). */
class InboxFrame implements Frame {
  header: FrameHeader;
  payload: Buffer;
  readonly sink: InboxSink;

  constructor(header: FrameHeader, payload: Buffer, sink: InboxSink) {
    this.header = header;
    this.payload = payload;
    this.sink = sink;
  }
}

/**
 * The payload of a frame nobody waits for yet, collected for its channel's inbox; one object per
 * frame (and its InboxFrame) and no closures, as most small frames take this way, both used again
 * for a later frame once its reader is done with it (ReceiveDispatch.recycle). If the frame fails
 * its checksum and is to come again, it takes a place in the channel's order first (restart), so
 * the frames behind it queue behind it instead of overtaking it into the next receive.
 */
class InboxSink implements FrameSink {
  private readonly dispatch: ReceiveDispatch;
  private link: PeerLink;
  private readonly frame: InboxFrame;
  private filled = 0;
  private slot: Slot | undefined = undefined;

  constructor(dispatch: ReceiveDispatch, link: PeerLink, header: FrameHeader) {
    this.dispatch = dispatch;
    this.link = link;
    this.frame = new InboxFrame(header, Buffer.allocUnsafe(header.length), this);
  }

  /** Takes another frame, its payload in the same memory where the length is the same. */
  carry(link: PeerLink, header: FrameHeader): void {
    const frame = this.frame;
    this.link = link;
    frame.header = header;
    if (frame.payload.byteLength !== header.length) frame.payload = Buffer.allocUnsafe(header.length);
    this.filled = 0;
    this.slot = undefined;
  }

  /** Whether the frame came whole at once, known to nothing but its inbox (see recycle). */
  get reusable(): boolean {
    return this.slot === undefined && this.filled === this.frame.header.length;
  }

  payload(piece: Uint8Array): void {
    this.frame.payload.set(piece, this.filled);
    this.filled += piece.byteLength;
  }

  payloadAt(chunk: Uint8Array, at: number, length: number): void {
    copyBytes(this.frame.payload, this.filled, chunk, at, length);
    this.filled += length;
  }

  end(): void {
    this.dispatch.inboxFrame(this.link, this.frame, this.slot);
  }

  restart(): void {
    this.filled = 0;
    if (this.slot !== undefined) return;
    this.slot = { frame: undefined };
    const { ordered } = this.link;
    let queue = ordered.get(this.frame.header.channel);
    if (queue === undefined) ordered.set(this.frame.header.channel, (queue = []));
    queue.push(this.slot);
  }
}
