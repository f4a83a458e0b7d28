import { ErrorCode, TscclError } from '../../errors.js';
import { type LowLatencySlots, type MessageTag, type WaitContext, messageMismatch } from '../transport.js';
import { ONE_SHOT_CHANNEL } from '../channels.js';
import { type Frame, copyBytes, u32 } from './frame.js';

/**
 * Bytes in front of a one-shot message's data: the size its publisher declared (u32, so a rank
 * that holds no data still states the call's size) and a marker (u32) that tells a one-shot
 * message from a schedule's. Eight, so the data stays 8-byte aligned for any element type.
 */
export const LOW_LATENCY_PREFIX_BYTES = 8;
const MARKER = 0x4c4c5431; // "1TLL" in memory order
/** The largest message of the one-shot path over TCP: 4 KiB, a common size, in one copied frame with its prefix. */
export const TCP_ONE_SHOT_BYTES = 4096;

/** What the one-shot path needs of the TCP transport. */
export interface LowLatencyLinks {
  readonly rank: number;
  readonly nranks: number;
  /** The id every frame of this communicator carries. */
  readonly commId: number;
  /** Sends a message (prefix and up to TCP_ONE_SHOT_BYTES), copied into its frame, so `data` is free again at once. */
  sendCopied(peer: number, channel: number, data: Uint8Array, tag: MessageTag): void;
  /** The next whole message on `channel` from `peer`, taken out of its inbox, unchecked. */
  takeMessage(peer: number, channel: number): Frame | undefined;
  /** A frame takeMessage gave is read and referred to no more: its memory may carry a later frame. */
  recycle(frame: Frame): void;
  /** Whether a message from `peer` waits on `channel`. */
  hasMessage(peer: number, channel: number): boolean;
  /** Reads `peer`'s frames for a few microseconds without turning the event loop; whether a message on `channel` then waits. */
  spinForMessage(peer: number, channel: number): boolean;
  /** Waits until a message from `peer` waits on `channel` (within the context's deadline). */
  waitForMessage(peer: number, channel: number, bytes: number, ctx: WaitContext): Promise<void>;
}

/**
 * The one-shot path over TCP (exec/one-shot.ts): a rank publishes a call by sending its message
 * to every peer in one copied frame each, and reads each peer's frame when it arrives. A frame
 * goes on channel 0, where the schedules' frames go too: a peer that ran a schedule for the same
 * call (it called another size, or forced another algorithm) finds this frame where it expects
 * its own, and either side reports the mismatch. No slot has to be freed before the next call:
 * every frame is a copy, queued in order behind the ones before it.
 */
export class TcpLowLatencySlots implements LowLatencySlots {
  readonly capacity = TCP_ONE_SHOT_BYTES;
  private readonly links: LowLatencyLinks;
  /** This rank's last message, prefix and data: what it sends, and what it reads of itself. */
  private readonly own = new Uint8Array(LOW_LATENCY_PREFIX_BYTES + TCP_ONE_SHOT_BYTES);
  private readonly ownWords = new DataView(this.own.buffer);
  /** The view of `own` the last publish sent, kept while calls repeat its length. */
  private ownMessage = this.own.subarray(0, LOW_LATENCY_PREFIX_BYTES);
  /** The tag of every publish, refilled per call: the send reads it at once and keeps nothing of it. */
  private readonly tag: { seq: number; opcode: number } = { seq: 0, opcode: 0 };
  /**
   * Each peer's last message, copied out of its frame into memory of its own, which every call
   * reuses: the one-shot path then keeps its typed views of it from call to call, where a view
   * of each new frame was garbage on every call (index: rank).
   */
  private readonly received: (Uint8Array | undefined)[] = [];
  /** The view each rank's last read returned (index: rank), kept while calls repeat its length. */
  private readonly views: (Uint8Array | undefined)[] = [];

  constructor(links: LowLatencyLinks) {
    this.links = links;
  }

  publish(seq: number, opcode: number, bytes: number, data: Uint8Array | undefined, _ctx: WaitContext): undefined {
    if (bytes > this.capacity)
      throw new RangeError(`a one-shot TCP message holds ${this.capacity} bytes, asked for ${bytes}`);
    this.ownWords.setUint32(0, bytes, true);
    this.ownWords.setUint32(4, MARKER, true);
    const length = data === undefined ? 0 : data.byteLength;
    if (length > 0) this.own.set(data!, LOW_LATENCY_PREFIX_BYTES);
    if (this.ownMessage.byteLength !== LOW_LATENCY_PREFIX_BYTES + length)
      this.ownMessage = this.own.subarray(0, LOW_LATENCY_PREFIX_BYTES + length);
    const tag = this.tag;
    tag.seq = seq;
    tag.opcode = opcode;
    for (let peer = 0; peer < this.links.nranks; peer++)
      if (peer !== this.links.rank) this.links.sendCopied(peer, ONE_SHOT_CHANNEL, this.ownMessage, tag);
    return undefined;
  }

  arrived(peer: number, _seq: number, ctx: WaitContext): Promise<void> | undefined {
    if (peer === this.links.rank || this.links.hasMessage(peer, 0)) return undefined;
    if (this.links.spinForMessage(peer, 0)) return undefined;
    return this.links.waitForMessage(peer, ONE_SHOT_CHANNEL, this.capacity, ctx);
  }

  read(peer: number, seq: number, opcode: number, bytes: number): Uint8Array {
    if (peer === this.links.rank) return this.view(peer, this.own, LOW_LATENCY_PREFIX_BYTES, bytes);
    const frame = this.links.takeMessage(peer, 0);
    if (frame === undefined)
      throw new TscclError(
        ErrorCode.INTERNAL,
        `Rank ${this.links.rank} read rank ${peer}'s one-shot message of #${seq} before it arrived`,
        { rank: this.links.rank, peer, seq },
      );
    const { header, payload } = frame;
    const marked = payload.byteLength >= LOW_LATENCY_PREFIX_BYTES && u32(payload, 4) === MARKER;
    const declared = marked ? u32(payload, 0) : undefined;
    const dataBytes = payload.byteLength - LOW_LATENCY_PREFIX_BYTES;
    if (
      header.seq !== seq ||
      header.opcode !== opcode ||
      header.commId !== this.links.commId ||
      declared !== bytes ||
      (dataBytes !== 0 && dataBytes !== bytes)
    ) {
      throw messageMismatch(
        this.links.rank,
        peer,
        { opcode, seq, bytes },
        { opcode: header.opcode, seq: header.seq, bytes: declared ?? header.length },
        `${marked ? '' : ' by another algorithm'}${header.commId !== this.links.commId ? ' on another communicator' : ''}`,
      );
    }
    // A copy at the start of memory of its own also keeps a reader's typed view aligned.
    let memory = this.received[peer];
    if (memory === undefined || memory.byteLength < dataBytes) {
      memory = new Uint8Array(Math.max(dataBytes, LOW_LATENCY_PREFIX_BYTES));
      this.received[peer] = memory;
    }
    copyBytes(memory, 0, payload, LOW_LATENCY_PREFIX_BYTES, dataBytes);
    this.links.recycle(frame);
    return this.view(peer, memory, 0, dataBytes);
  }

  /** `bytes` of `memory` from `from`, as the same view while `rank`'s reads repeat them. */
  private view(rank: number, memory: Uint8Array, from: number, bytes: number): Uint8Array {
    let view = this.views[rank];
    if (view === undefined || view.buffer !== memory.buffer || view.byteLength !== bytes) {
      view = new Uint8Array(memory.buffer, memory.byteOffset + from, bytes);
      this.views[rank] = view;
    }
    return view;
  }
}
