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
  bufferingSink,
  copyBytes,
} from './frame.js';
import type { PeerLink, Slot, WaitingRecv } from './peer-link.js';
import { type ReceiveBuffers, stagedSink, streamingSink } from './receive-sink.js';
import type { Resend } from './resend.js';
import { openStripe } from './striping.js';
import { HOLD_MIN_BYTES } from './tcp-tunables.js';

/**
 * Where each arriving frame goes: a control frame to the control channel, a stripe to its
 * assembly, a data frame into the receive waiting for it (streamed, see streamingSink) or else
 * into its channel's inbox, whole, in order. A received frame is checked against its receive
 * (length, seq, opcode, communicator) before a byte is handed over. With resend on, a
 * checksummed frame that a reduction takes is read whole into staging memory and reduced once
 * intact (stagedSink): a reduction cannot take back bytes that turn out corrupted, as a copy can
 * be overwritten.
 */
export class ReceiveDispatch {
  private readonly rank: number;
  private readonly commId: number;
  private readonly buffers: ReceiveBuffers;
  private readonly control: ControlChannel;
  private readonly resend: Resend;

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
    return new InboxSink(this, link, header);
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

/**
 * The payload of a frame nobody waits for yet, collected for its channel's inbox; one object per
 * frame and no closures, as most small frames take this way. If the frame fails its checksum and
 * is to come again, it takes a place in the channel's order first (restart), so the frames behind
 * it queue behind it instead of overtaking it into the next receive.
 */
class InboxSink implements FrameSink {
  private readonly dispatch: ReceiveDispatch;
  private readonly link: PeerLink;
  private readonly header: FrameHeader;
  private readonly bytes: Buffer;
  private filled = 0;
  private slot: Slot | undefined;

  constructor(dispatch: ReceiveDispatch, link: PeerLink, header: FrameHeader) {
    this.dispatch = dispatch;
    this.link = link;
    this.header = header;
    this.bytes = Buffer.allocUnsafe(header.length);
  }

  payload(piece: Uint8Array): void {
    this.bytes.set(piece, this.filled);
    this.filled += piece.byteLength;
  }

  payloadAt(chunk: Uint8Array, at: number, length: number): void {
    copyBytes(this.bytes, this.filled, chunk, at, length);
    this.filled += length;
  }

  end(): void {
    this.dispatch.inboxFrame(this.link, { header: this.header, payload: this.bytes }, this.slot);
  }

  restart(): void {
    this.filled = 0;
    if (this.slot !== undefined) return;
    this.slot = { frame: undefined };
    const { ordered } = this.link;
    let queue = ordered.get(this.header.channel);
    if (queue === undefined) ordered.set(this.header.channel, (queue = []));
    queue.push(this.slot);
  }
}
