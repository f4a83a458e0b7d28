import { ErrorCode, type ErrorCodeValue } from '../errors.js';
import { STATUS_ENTERED_SEQ, STATUS_FAILED, STATUS_FAILED_SEQ } from '../transport/shm/mailbox.js';
import type { StatusBoard } from './backend.js';

/**
 * The shared-memory status board: each rank's status words for one communicator, in its
 * mailbox and readable by every peer: the last collective it entered, and whether it gave up on
 * the communicator (and why).
 */
const CODES = Object.values(ErrorCode);

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
    Atomics.store(this.words, this.bases[this.rank] + STATUS_ENTERED_SEQ, seq);
  }

  lastSeenSeq(rank: number): number {
    return Atomics.load(this.words, this.bases[rank] + STATUS_ENTERED_SEQ);
  }

  fail(code: ErrorCodeValue, seq: number): void {
    Atomics.store(this.words, this.bases[this.rank] + STATUS_FAILED_SEQ, seq);
    Atomics.store(this.words, this.bases[this.rank] + STATUS_FAILED, CODES.indexOf(code) + 1);
  }

  /** The first peer that gave up on this communicator, if any. */
  failedPeer(): { rank: number; code: ErrorCodeValue; seq: number } | undefined {
    for (let r = 0; r < this.bases.length; r++) {
      if (r === this.rank) continue;
      const code = Atomics.load(this.words, this.bases[r] + STATUS_FAILED);
      if (code !== 0) return { rank: r, code: CODES[code - 1] ?? ErrorCode.INTERNAL, seq: Atomics.load(this.words, this.bases[r] + STATUS_FAILED_SEQ) };
    }
    return undefined;
  }
}
