import type { Connection, PeerLink } from './peer-link.js';
import { HOLD_MS } from './tcp-tunables.js';

const EMPTY = new Uint8Array(0);

/** What the hold needs of the reader of a held socket. */
export interface HeldReader {
  /** Feeds bytes to the socket's parser; `patient`: a frame without a receiver may be held again. */
  take(bytes: Uint8Array, patient?: boolean): void;
  /** Whether the parser stopped at a frame it may not hand anywhere yet. */
  readonly stalled: boolean;
}

/**
 * Flow control. A data frame of HOLD_MIN_BYTES or more whose receiver is not posted yet is held
 * back: its socket stops reading (the rest of the frame stays in the kernel, so the sender's later
 * bytes wait there too, as a receiver's credits make them wait in NCCL) until a receive is posted
 * on the link, this rank starts to wait for one of its own sends to be taken (the peer may be
 * holding that back too), or HOLD_MS pass (holdWhileSendingMs for a frame that came during such a
 * wait); then it is buffered, as smaller frames are at once. So a frame streams into its receiver
 * instead of into a copy, whether it came just behind the previous one or from a peer whose turn
 * comes later.
 */
export class FrameHolds {
  private readonly holdWhileSendingMs: number;
  /** Sends being waited for: while there are any, arriving frames are held back only briefly. */
  private deliveryWaits = 0;

  constructor(holdWhileSendingMs: number) {
    this.holdWhileSendingMs = holdWhileSendingMs;
  }

  /** Stops reading a socket whose parser stalled; `rest`: the bytes of the read behind the stall. */
  hold(link: PeerLink, { socket, intake }: Connection, rest: Uint8Array, reader: HeldReader): void {
    intake.detach(rest);
    socket.pause();
    const resume = (giveUp: boolean) => {
      link.held.delete(resume);
      reader.take(EMPTY, !giveUp);
      if (reader.stalled) return;
      intake.attach(reader.take);
      if (!reader.stalled && !socket.destroyed) socket.resume();
    };
    link.held.add(resume);
    setTimeout(
      () => {
        if (link.held.has(resume)) resume(true);
      },
      this.deliveryWaits > 0 ? this.holdWhileSendingMs : HOLD_MS,
    ).unref();
  }

  /**
   * Waits for one of this rank's sends. The peer may be holding back this rank's bytes until it
   * posts their receive, and it may itself wait for this rank to take its sends first: while any
   * send waits, a frame is held only briefly, and those held before give up now.
   */
  async whileSending(links: readonly PeerLink[], wait: () => Promise<void>): Promise<void> {
    this.deliveryWaits++;
    for (const other of links) other.releaseHeld(true);
    try {
      await wait();
    } finally {
      this.deliveryWaits--;
    }
  }
}
