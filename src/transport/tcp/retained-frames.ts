import { frameError } from './frame.js';

/** A checksummed frame this rank wrote and may be asked to send again. */
export interface RetainedFrame {
  readonly number: number;
  readonly payload: Uint8Array;
  /**
   * For a frame written from the caller's memory: the CRC32 it was sent with. That memory may
   * have changed since the send was delivered; a resend is made only of bytes that still match.
   * Undefined for a frame that is a copy (its bytes cannot change).
   */
  readonly checksum: number | undefined;
}

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

  /** Keeps frame `number` of socket `lane` until the peer acknowledges it: a copy, or (with its checksum) caller memory. */
  keep(lane: number, number: number, payload: Uint8Array, checksum?: number): void {
    this.kept[lane].push({ number, payload, checksum });
    if (checksum !== undefined) {
      if (++this.references > MAX_REFERENCES * this.kept.length) this.forgetOldest((f) => f.checksum !== undefined);
      return;
    }
    this.copiedBytes += payload.byteLength;
    if (this.copiedBytes > this.windowBytes) this.forgetOldest((f) => f.checksum === undefined);
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

  /** Frames kept now, and the bytes of those that are copies. */
  get holding(): { frames: number; copiedBytes: number; references: number } {
    return {
      frames: this.kept.reduce((sum, k) => sum + k.length, 0),
      copiedBytes: this.copiedBytes,
      references: this.references,
    };
  }

  /** Forgets every kept frame (the link is closing and the peer did not acknowledge them in time). */
  forgetAll(): void {
    for (const kept of this.kept) kept.length = 0;
    this.copiedBytes = 0;
    this.references = 0;
  }

  private forgot(frame: RetainedFrame): void {
    if (frame.checksum === undefined) this.copiedBytes -= frame.payload.byteLength;
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
