import { frameError } from './frame.js';

/** A checksummed frame this rank wrote and may be asked to send again. */
export interface RetainedFrame {
  readonly number: number;
  /** The frame's encoded header, as written: a reconnected socket carries the frame again whole. */
  readonly header: Uint8Array;
  readonly payload: Uint8Array;
  /**
   * For a frame written from the caller's memory: the CRC32 it was sent with. That memory may
   * have changed since the send was delivered; a resend is made only of bytes that still match.
   * Undefined for a frame that is a copy (its bytes cannot change).
   */
  readonly checksum: number | undefined;
  /** A control or link frame (kept only so that a reconnected socket can carry it again): never waited for. */
  readonly control?: boolean;
}

/** Why a socket cannot go on from a frame: the first frame from there on that is not kept. */
export type ResumeGap = { readonly missing: number };

/** References to caller memory kept per socket at most (the oldest is forgotten past it). */
export const MAX_REFERENCES = 1024;

/**
 * The sending side of resend, for one peer: how many frames each socket carried, and the
 * checksummed ones the peer has not acknowledged yet. A frame up to COPY_FRAME_MAX_BYTES is
 * already a copy, so keeping it costs memory only: at most `windowBytes` of them are kept, and
 * past that the oldest is forgotten (a request for it is answered GONE). A larger frame is kept
 * as a reference to the caller's memory, which costs nothing and delays nothing: its send is
 * delivered when the socket took it, as without resend. If the caller rewrote that memory before
 * the peer asked for the frame again, the bytes no longer match the frame's checksum and the
 * request is answered GONE: the call fails with TSCCL_ERR_CHECKSUM, as it would without resend.
 */
export class RetainedFrames {
  /** Frames written per socket: the number of each socket's last frame. */
  readonly written: number[];
  private readonly kept: RetainedFrame[][];
  private copiedBytes = 0;
  private references = 0;
  private controlFrames = 0;
  private readonly windowBytes: number;
  private readonly peer: number;

  constructor(peer: number, lanes: number, windowBytes: number) {
    this.peer = peer;
    this.written = new Array<number>(lanes).fill(0);
    this.kept = Array.from({ length: lanes }, () => []);
    this.windowBytes = windowBytes;
  }

  /** The number of the frame about to be written on socket `lane`. */
  next(lane: number): number {
    return ++this.written[lane];
  }

  /** Keeps a frame of socket `lane` until the peer acknowledges it: a copy, or (with its checksum) caller memory. */
  keep(lane: number, frame: RetainedFrame): void {
    this.kept[lane].push(frame);
    if (frame.control) this.controlFrames++;
    if (frame.checksum !== undefined) {
      if (++this.references > MAX_REFERENCES * this.kept.length) this.forgetOldest((f) => f.checksum !== undefined);
      return;
    }
    this.copiedBytes += frame.payload.byteLength + (frame.control ? frame.header.byteLength : 0);
    if (this.copiedBytes > this.windowBytes) this.forgetOldest((f) => f.checksum === undefined);
  }

  /**
   * The frames socket `lane` carried from number `from` on, to write again on a new socket in
   * their order; or the first of them no longer kept (a frame without a checksum is never kept,
   * as nothing could tell its bytes from changed ones).
   */
  from(lane: number, from: number): RetainedFrame[] | ResumeGap {
    const kept = this.kept[lane];
    let i = 0;
    while (i < kept.length && kept[i].number < from) i++;
    const frames = kept.slice(i);
    for (let n = from, k = 0; n <= this.written[lane]; n++, k++) if (frames[k]?.number !== n) return { missing: n };
    return frames;
  }

  /** A new socket replaces socket `lane` and carries its frames from number `from` on. */
  restartAt(lane: number, from: number): void {
    this.written[lane] = from - 1;
  }

  /** The peer has every frame of socket `lane` up to `upTo` intact; an acknowledgement of frames never written is a frame error. */
  acknowledge(lane: number, upTo: number): void {
    if (upTo > this.written[lane])
      throw frameError(
        `rank ${this.peer} acknowledged frame ${upTo} of socket ${lane}, but only ${this.written[lane]} were written`,
      );
    const kept = this.kept[lane];
    let n = 0;
    while (n < kept.length && kept[n].number <= upTo) n++;
    if (n === 0) return;
    for (const frame of kept.splice(0, n)) this.forgot(frame);
  }

  /** Frame `number` of socket `lane`, if it is still kept. */
  find(lane: number, number: number): RetainedFrame | undefined {
    const kept = this.kept[lane];
    if (kept === undefined) return undefined;
    for (const frame of kept) if (frame.number === number) return frame;
    return undefined;
  }

  /** Data frames kept now (control frames aside), and the bytes of those that are copies. */
  get holding(): { frames: number; copiedBytes: number; references: number } {
    return {
      frames: this.kept.reduce((sum, k) => sum + k.length, 0) - this.controlFrames,
      copiedBytes: this.copiedBytes,
      references: this.references,
    };
  }

  /** Forgets every kept frame (the link is closing and the peer did not acknowledge them in time). */
  forgetAll(): void {
    for (const kept of this.kept) kept.length = 0;
    this.copiedBytes = 0;
    this.references = 0;
    this.controlFrames = 0;
  }

  private forgot(frame: RetainedFrame): void {
    if (frame.control) this.controlFrames--;
    if (frame.checksum === undefined)
      this.copiedBytes -= frame.payload.byteLength + (frame.control ? frame.header.byteLength : 0);
    else this.references--;
  }

  /** Forgets the oldest frames of a kind until the bounds hold again (rare: the peer acknowledges long before). */
  private forgetOldest(kind: (frame: RetainedFrame) => boolean): void {
    const over = () => this.copiedBytes > this.windowBytes || this.references > MAX_REFERENCES * this.kept.length;
    for (const kept of this.kept) {
      for (let i = 0; i < kept.length && over(); ) {
        if (!kind(kept[i])) {
          i++;
          continue;
        }
        this.forgot(kept[i]);
        kept.splice(i, 1);
      }
    }
  }
}
