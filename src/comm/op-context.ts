import { ErrorCode, type ErrorCodeValue, TscclError, rankList } from '../errors.js';
import { epochMs } from '../debug/epoch-clock.js';
import { log } from '../log.js';
import type { WaitContext } from '../transport/transport.js';
import type { StatusBoard } from './backend.js';

/** Longest sleep between checks of deadline, signal and peers: bounds how late a failure is seen. */
const MAX_SLICE_MS = 50;
/**
 * A call whose steps advanced this recently when it timed out was still moving its data: it
 * needed more time (TSCCL_CHUNK_BYTES=4 on an 8 MB all-reduce: 2 million steps), which is not
 * a sign of ranks calling it differently.
 */
const STILL_MOVING_MS = 1000;
/** A power of two: a check costs a few property reads and a clock read, a step a microsecond or more. */
const CHECK_EVERY_STEPS = 1024;
/** A wait this long tells the peers where this rank is (see StatusBoard.announce). */
const ANNOUNCE_AFTER_MS = 150;
/**
 * A collective still waiting for ranks that never entered it after this long (or a quarter of
 * its timeout, if less) says so once, long before the timeout ends it: silence for minutes
 * looks like a hang.
 */
const WARN_MISSING_AFTER_MS = 10_000;

/** What every call of one communicator on this rank shares (built once per communicator). */
export interface CommScope {
  readonly rank: number;
  readonly commName: string;
  readonly status: StatusBoard;
  /** A rank of the communicator known to be dead that had not ended collective `seq` (any, for seq undefined). */
  readonly lostRank: (seq: number | undefined) => number | undefined;
  /** An error if this rank ended the communicator itself (destroy, abort). */
  readonly localAbort: () => TscclError | undefined;
  readonly spinMs: number;
  readonly spinYields: boolean;
}

/** One call: what it is, and how long it may wait. */
export interface OpDescription {
  readonly op: string;
  readonly seq: number;
  /** For collectives: ranks that must have entered seq. For point-to-point: the peer. */
  readonly participants: readonly number[];
  readonly collective: boolean;
  readonly timeoutMs: number;
  readonly signal: AbortSignal | undefined;
  /** When the call started (epochMs), if its caller already read the clock; now otherwise. */
  readonly startedAt?: number;
}

/**
 * The WaitContext of one call: ends it on its deadline, its AbortSignal, a job-wide abort (a rank
 * thread died), or a peer that gave up on the communicator, with a message that says which. One
 * object per call, holding the call's fields itself; a communicator renews the context of a
 * collective that ended well for its next one (renew), so a stream of small calls makes none.
 */
export class OpContext implements WaitContext {
  private readonly scope: CommScope;
  private op: string;
  private seq: number;
  private readonly participants: readonly number[];
  private readonly collective: boolean;
  // The numbers start as numbers, not as the undefined a declared field holds first: V8 then
  // stores a renewed call's times in place, where a field that held undefined boxes each one.
  private timeoutMs = 0;
  private signal: AbortSignal | undefined;
  /** When the call started, in epochMs: its deadline and its messages count from here. */
  private started = 0;
  private deadline = 0;
  private announced = false;
  private warned = false;
  /** Steps the call has done, the count check() last saw, and when it last saw it grow. */
  private steps = 0;
  private stepsSeen = 0;
  private movedAt = -Infinity;
  /** Whether the call may have read a peer's own memory in place, which endReads guards. */
  private peerMemoryRead = true;
  readonly spinMs: number;
  readonly spinYields: boolean;

  constructor(scope: CommScope, call: OpDescription) {
    this.scope = scope;
    this.spinMs = scope.spinMs;
    this.spinYields = scope.spinYields;
    this.op = call.op;
    this.seq = call.seq;
    this.participants = call.participants;
    this.collective = call.collective;
    this.timeoutMs = call.timeoutMs;
    this.signal = call.signal;
    this.started = call.startedAt ?? epochMs();
    this.deadline = this.started + this.timeoutMs;
  }

  /**
   * This context made new for another call of the same participants, started at `startedAt`
   * (epochMs): the caller's call ended, and nothing of it holds the context any more. Positional,
   * so that renewing makes no object on a small call's path.
   */
  renew(op: string, seq: number, timeoutMs: number, signal: AbortSignal | undefined, startedAt: number): this {
    this.op = op;
    this.seq = seq;
    this.timeoutMs = timeoutMs;
    this.signal = signal;
    this.started = startedAt;
    this.deadline = this.started + timeoutMs;
    this.announced = false;
    this.warned = false;
    this.steps = 0;
    this.stepsSeen = 0;
    this.movedAt = Number.NEGATIVE_INFINITY;
    this.peerMemoryRead = true;
    return this;
  }

  sliceMs(): number {
    return Math.max(1, Math.min(MAX_SLICE_MS, this.deadline - epochMs()));
  }

  /** Every CHECK_EVERY_STEPS steps it checks too: a call whose waits all end within their spin never sleeps, and would never see its deadline. */
  stepDone(): void {
    if ((++this.steps & (CHECK_EVERY_STEPS - 1)) === 0) this.check();
  }

  check(): void {
    const { op, seq, participants } = this;
    const { rank, commName } = this.scope;
    const local = this.scope.localAbort();
    if (local !== undefined) throw local;
    if (this.signal?.aborted) {
      throw new TscclError(
        ErrorCode.ABORTED,
        `${this.where()} was aborted by its signal: ${String(this.signal.reason)}`,
        { rank, op, seq },
      );
    }
    const lost = this.scope.lostRank(this.collective ? seq : undefined);
    if (lost !== undefined && participants.includes(lost)) {
      throw new TscclError(ErrorCode.PEER_LOST, `${this.where()} ended: rank ${lost} of ${commName} died`, {
        rank,
        peer: lost,
        origin: lost,
        op,
        seq,
      });
    }
    const failed = this.failedPeer();
    if (failed !== undefined) {
      // A lost rank explains the failure by itself; the ranks this one has not yet heard enter the
      // call (over TCP, only a wait that runs long announces it) would be named as absent wrongly.
      const missing = failed.code === ErrorCode.PEER_LOST ? [] : this.missingRanks().filter((r) => r !== failed.rank);
      throw this.gaveUp(failed, missing.length > 0 ? `; ${this.describeMissing(missing)}` : '', missing);
    }
    const now = epochMs();
    if (this.steps !== this.stepsSeen) {
      this.stepsSeen = this.steps;
      this.movedAt = now;
    }
    if (!this.announced && this.collective && now - this.started > ANNOUNCE_AFTER_MS) {
      this.announced = true;
      this.scope.status.announce(seq);
    }
    if (!this.warned && this.collective && now - this.started > Math.min(WARN_MISSING_AFTER_MS, this.timeoutMs / 4))
      this.warnMissing(now);
    if (now >= this.deadline) throw this.timeoutError();
  }

  private warnMissing(now: number): void {
    const missing = this.missingRanks();
    if (missing.length === 0) return;
    this.warned = true;
    log(
      'WARN',
      () =>
        `${this.where()} has waited ${((now - this.started) / 1000).toFixed(1)} s: ${this.describeMissing(missing)}; ` +
        `it gives up after ${(this.timeoutMs / 1000).toFixed(1)} s (timeoutMs, TSCCL_TIMEOUT_MS)`,
    );
  }

  /**
   * Ends reads that are done. Thread ranks read each other's buffers in place, and a peer whose
   * call failed may take its buffer back (rewrite or free it) while this rank still reads; it
   * publishes its give-up before its caller hears of the failure, so a read that met such memory
   * ended before this looks, and the call fails instead of returning what it read. A peer that
   * had ended this collective before giving up (it moved on, then aborted) endangers nothing.
   */
  endReads(): void {
    if (!this.peerMemoryRead) return;
    const failed = this.failedPeer();
    if (failed !== undefined)
      throw this.gaveUp(failed, ', so what it read may come from memory its owner took back', []);
  }

  /** The call read only copies in shared slots, which no peer takes back: endReads has nothing to check. */
  readNoPeerMemory(): void {
    this.peerMemoryRead = false;
  }

  /** A participant that gave up before ending this call (a collective), or at all (point-to-point). */
  private failedPeer(): { rank: number; code: ErrorCodeValue; seq: number } | undefined {
    return this.scope.status.failedBefore(this.participants, this.collective ? this.seq : undefined);
  }

  private gaveUp(
    failed: { rank: number; code: ErrorCodeValue; seq: number },
    tail: string,
    missing: number[],
  ): TscclError {
    const { op, seq } = this;
    const { rank, commName } = this.scope;
    return new TscclError(
      failed.code,
      `${this.where()} ended: rank ${failed.rank} gave up on ${commName} at #${failed.seq} with ${failed.code}${tail}`,
      { rank, peer: failed.rank, origin: failed.rank, op, seq, missingRanks: missing },
    );
  }

  /** The call and its communicator, as messages name them (built only for an error). */
  private where(): string {
    return `${this.op} #${this.seq} on rank ${this.scope.rank} of ${this.scope.commName}`;
  }

  /** Ranks of a collective that have not started it yet. */
  private missingRanks(): number[] {
    if (!this.collective) return [];
    return this.participants.filter(
      (r) => r !== this.scope.rank && ((this.scope.status.lastSeenSeq(r) - this.seq) | 0) < 0,
    );
  }

  private describeMissing(missing: readonly number[]): string {
    return `${rankList(missing)} did not arrive (${missing.map((r) => `rank ${r} last seen at #${this.scope.status.lastSeenSeq(r)}`).join(', ')})`;
  }

  private timeoutError(): TscclError {
    const { op, seq, participants } = this;
    const rank = this.scope.rank;
    const elapsed = Math.round(epochMs() - this.started);
    if (!this.collective) {
      return new TscclError(
        ErrorCode.TIMEOUT,
        `${this.where()} timed out after ${elapsed} ms (timeout ${this.timeoutMs} ms) waiting for rank ${participants[0]}`,
        { rank, peer: participants[0], op, seq },
      );
    }
    const missing = this.missingRanks();
    const sinceMoved = epochMs() - this.movedAt;
    const why =
      missing.length > 0
        ? this.describeMissing(missing)
        : sinceMoved <= STILL_MOVING_MS
          ? `every rank arrived and the data was still moving (${this.steps} of its steps done on this rank, the last seen ${Math.round(sinceMoved)} ms before it timed out): the call needs more than its timeout`
          : `every rank arrived, but the data did not flow (${this.steps} of its steps done on this rank): the ranks called it with different arguments (count, dtype, root), or a link between them stopped carrying data`;
    return new TscclError(
      ErrorCode.TIMEOUT,
      `${this.where()} timed out after ${elapsed} ms (timeout ${this.timeoutMs} ms): ${why}`,
      { rank, op, seq, missingRanks: missing },
    );
  }
}
