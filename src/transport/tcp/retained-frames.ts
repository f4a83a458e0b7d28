import { frameError } from './frame.js';

/** A checksummed frame this rank wrote and may be asked to send again. */
export interface RetainedFrame {
  readonly number: number;
  readonly payload: Uint8Array;
  /**
   * For a frame written from the caller's memory: called once the peer acknowledged it, which
   * frees that memory (the send's wait ends only then). Undefined for a frame that is a copy.
   */
  readonly acknowledged: (() => void) | undefined;
}

/**
 * The sending side of resend, for one peer: how many frames each socket carried, and the
 * checksummed ones the peer has not acknowledged yet. A frame up to COPY_FRAME_MAX_BYTES is
 * already a copy, so keeping it costs memory only: at most `windowBytes` of them are kept, and
 * past that the oldest is forgotten (a request for it is answered GONE). A larger frame is kept
 * as the caller's own memory, which its send holds until the acknowledgement: no copy, but the
 * send ends a round trip later than the socket took it.
 */
export class RetainedFrames {
  /** Frames written per socket: the number of each socket's last frame. */
  readonly written: number[];
  private readonly kept: RetainedFrame[][];
  private copiedBytes = 0;
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

  /** Keeps frame `number` of socket `lane` until the peer acknowledges it. */
  keep(lane: number, number: number, payload: Uint8Array, acknowledged?: () => void): void {
    this.kept[lane].push({ number, payload, acknowledged });
    if (acknowledged !== undefined) return;
    this.copiedBytes += payload.byteLength;
    if (this.copiedBytes > this.windowBytes) this.forgetOldestCopies();
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
    for (const frame of kept.splice(0, n)) {
      if (frame.acknowledged === undefined) this.copiedBytes -= frame.payload.byteLength;
      else frame.acknowledged();
    }
  }

  /** Frame `number` of socket `lane`, if it is still kept. */
  find(lane: number, number: number): RetainedFrame | undefined {
    const kept = this.kept[lane];
    if (kept === undefined) return undefined;
    for (const frame of kept) if (frame.number === number) return frame;
    return undefined;
  }

  /** Frames kept now, and the bytes of those that are copies. */
  get holding(): { frames: number; copiedBytes: number } {
    return { frames: this.kept.reduce((sum, k) => sum + k.length, 0), copiedBytes: this.copiedBytes };
  }

  /** Forgets every kept frame (the link is closing and the peer did not acknowledge them in time). */
  forgetAll(): void {
    for (const kept of this.kept) kept.length = 0;
    this.copiedBytes = 0;
  }

  private forgetOldestCopies(): void {
    for (const kept of this.kept) {
      for (let i = 0; i < kept.length && this.copiedBytes > this.windowBytes; ) {
        if (kept[i].acknowledged !== undefined) {
          i++;
          continue;
        }
        this.copiedBytes -= kept[i].payload.byteLength;
        kept.splice(i, 1);
      }
    }
  }
}
