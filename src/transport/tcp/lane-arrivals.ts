import type { FrameHeader, FrameSink } from './frame.js';

/** A frame that failed its checksum and will come again: its sink waits, unended. */
export interface PendingFrame {
  readonly sink: FrameSink;
  readonly header: FrameHeader;
  /** Requests sent for it so far. */
  attempts: number;
}

/** The receiving side of one socket: frames that will come again, and how far the acknowledgements got. */
export class LaneArrivals {
  readonly pending = new Map<number, PendingFrame>();
  /** The number of the last frame that ended, intact or not. */
  ended = 0;
  /** The highest number acknowledged to the peer. */
  acked = 0;
  /** Checksummed frames intact since the last acknowledgement. */
  unacked = 0;

  /** The highest number every frame up to which is in intact. */
  get complete(): number {
    let first = Number.POSITIVE_INFINITY;
    for (const number of this.pending.keys()) first = Math.min(first, number);
    return Math.min(this.ended, first - 1);
  }
}
