import { type ErrorCodeValue, errorCodeOfWireNumber, errorWireNumber } from '../errors.js';
import {
  STATUS_CLOSED,
  STATUS_ENDED_SEQ,
  STATUS_ENTERED_SEQ,
  STATUS_FAILED,
  STATUS_FAILED_ORIGIN,
  STATUS_FAILED_SEQ,
  STATUS_SHRINK_EPOCH,
  STATUS_SHRINK_MAILBOX,
  STATUS_SLEEPERS,
} from '../transport/shm/mailbox.js';
import { wake } from '../transport/wait.js';
import type { StatusBoard } from './backend.js';

/**
 * The shared-memory status board: each rank's status words for one communicator, in its
 * mailbox and readable by every peer: the last collective it entered, and whether it gave up on
 * the communicator (and why).
 */
export class CommStatus implements StatusBoard {
  private readonly words: Int32Array;
  private readonly bases: readonly number[];
  private readonly rank: number;

  constructor(words: Int32Array, mailboxByteOffsets: readonly number[], rank: number) {
    this.words = words;
    this.bases = mailboxByteOffsets.map((b) => b / 4);
    this.rank = rank;
  }

  enter(seq: number): void {
    const base = this.bases[this.rank];
    Atomics.store(this.words, base + STATUS_ENTERED_SEQ, seq);
    // A peer may sleep on this word until it may reuse a low-latency slot.
    wake(this.words, base + STATUS_ENTERED_SEQ, base + STATUS_SLEEPERS);
  }

  lastSeenSeq(rank: number): number {
    return Atomics.load(this.words, this.bases[rank] + STATUS_ENTERED_SEQ);
  }

  /**
   * The failure word is written by a read-modify-write, as `failedBefore` reads it: a peer whose
   * read of it found no failure then happens before this rank's caller takes its memory back
   * (a plain load would not order the peer's earlier reads of that memory on weakly ordered
   * CPUs such as ARM, where a load-acquire lets earlier loads complete after it).
   */
  fail(code: ErrorCodeValue, seq: number, origin: number): void {
    Atomics.store(this.words, this.bases[this.rank] + STATUS_FAILED_SEQ, seq);
    Atomics.store(this.words, this.bases[this.rank] + STATUS_FAILED_ORIGIN, origin);
    Atomics.exchange(this.words, this.bases[this.rank] + STATUS_FAILED, errorWireNumber(code));
  }

  /** Offers this rank's mailbox for shrink number `epoch` (mailbox first, so a reader of the epoch sees it). */
  offerShrink(epoch: number, mailbox: number): void {
    Atomics.store(this.words, this.bases[this.rank] + STATUS_SHRINK_MAILBOX, mailbox);
    Atomics.store(this.words, this.bases[this.rank] + STATUS_SHRINK_EPOCH, epoch);
  }

  /** The mailbox `rank` offered for shrink `epoch`, or undefined while it has not. */
  shrinkOffer(rank: number, epoch: number): number | undefined {
    if (Atomics.load(this.words, this.bases[rank] + STATUS_SHRINK_EPOCH) !== epoch) return undefined;
    return Atomics.load(this.words, this.bases[rank] + STATUS_SHRINK_MAILBOX) >>> 0;
  }

  /** The status words are already visible to every peer. */
  announce(): void {}

  end(seq: number): void {
    Atomics.store(this.words, this.bases[this.rank] + STATUS_ENDED_SEQ, seq);
  }

  /** Whether `rank` ended collective `seq` (or a later one) successfully. */
  hasEnded(rank: number, seq: number): boolean {
    return ((Atomics.load(this.words, this.bases[rank] + STATUS_ENDED_SEQ) - seq) | 0) >= 0;
  }

  /** This rank is done with every member's mailbox: the last thing it does with them. */
  close(): void {
    for (const base of this.bases) Atomics.add(this.words, base + STATUS_CLOSED, 1);
  }

  /** Has every member closed, so that nobody touches this rank's mailbox any more? */
  allClosed(): boolean {
    return Atomics.load(this.words, this.bases[this.rank] + STATUS_CLOSED) === this.bases.length;
  }

  /** A peer's failure word is loaded first: it was stored after any end before it. Dead ranks are the arena's to tell. */
  failedBefore(
    peers: readonly number[],
    seq: number | undefined,
  ): { rank: number; code: ErrorCodeValue; seq: number } | undefined {
    for (const r of peers) {
      if (r === this.rank) continue;
      // Read by a read-modify-write (see fail): what this rank read before is then ordered before any give-up it misses.
      const code = Atomics.or(this.words, this.bases[r] + STATUS_FAILED, 0);
      if (code === 0) continue;
      if (seq !== undefined && this.hasEnded(r, seq)) continue;
      return {
        rank: Atomics.load(this.words, this.bases[r] + STATUS_FAILED_ORIGIN),
        code: errorCodeOfWireNumber(code),
        seq: Atomics.load(this.words, this.bases[r] + STATUS_FAILED_SEQ),
      };
    }
    return undefined;
  }
}
