import { ErrorCode, type ErrorCodeValue, TscclError } from '../errors.js';
import type { Transport } from '../transport/transport.js';

/**
 * What a rank knows of its peers on one communicator: the last collective each was seen in,
 * and whether one gave up on the communicator. Waiting calls read it to name who has not
 * arrived and to end at once when a peer has failed.
 */
export interface StatusBoard {
  enter(seq: number): void;
  /** The last collective sequence number this rank has seen `rank` in. */
  lastSeenSeq(rank: number): number;
  /**
   * Tells the peers this rank gave up on the communicator; `origin` is the rank whose failure
   * started it (this rank, or the peer whose failure ended this rank's call), so everyone names it.
   */
  fail(code: ErrorCodeValue, seq: number, origin: number): void;
  /**
   * This rank ended collective `seq` successfully: it needs nothing more from its peers for that
   * call, and they read nothing it shared for it any more.
   */
  end(seq: number): void;
  /**
   * One of `peers` that gave up on the communicator before ending collective `seq` (at any time,
   * for seq undefined), or died: `rank` is the origin of the failure, `seq` where it happened.
   * A peer that ended the call before giving up (it moved on, then failed or aborted) has done
   * its part of it, so that call need not fail.
   */
  failedBefore(
    peers: readonly number[],
    seq: number | undefined,
  ): { rank: number; code: ErrorCodeValue; seq: number } | undefined;
  /**
   * Tells the peers this rank is waiting in collective `seq`, so that a timeout elsewhere names
   * only the ranks that truly did not arrive. Called once per call, when a wait runs long.
   */
  announce(seq: number): void;
}

/**
 * How a communicator reaches its peers: shared memory between thread ranks, or TCP between
 * processes. The communicator, executor and algorithms are the same over either.
 */
export interface CommBackend {
  readonly kind: 'shm' | 'tcp';
  /**
   * Peers in this process read this rank's buffers in place (thread ranks), so a call's arrays
   * must live in the shared arena; over TCP alone any memory will do.
   */
  readonly sharesMemory: boolean;
  readonly transport: Transport;
  readonly status: StatusBoard;
  /** How long waits spin before sleeping, in ms. */
  readonly spinMs: number;
  /** Whether a spinning wait yields its core on every turn (thread ranks that outnumber the cores). */
  readonly spinYields: boolean;
  /** This process runs more rank threads than it has cores (the tuner then avoids hand-offs). */
  readonly oversubscribed: boolean;
  /**
   * Busy threads of this communicator's ranks on this rank's machine, its own included: the
   * threads that share its cores while calls run.
   */
  readonly machineThreads: number;
  /** Host index of every rank, when the ranks span several hosts; undefined when they share one. */
  readonly hosts: readonly number[] | undefined;
  /**
   * A rank of this communicator known to be dead (its thread or process ended) that had not
   * ended collective `seq` (any dead rank, for seq undefined). A rank that ended the call before
   * it died has done its part of it: only later calls need fail.
   */
  lostRank(seq: number | undefined): number | undefined;
  /** What this rank adds to a split's all-gather (shm: the offset of its new mailbox). */
  prepareSplit(joins: boolean): number;
  /** Builds the new communicator's backend from the members (parent ranks, in new rank order). */
  completeSplit(split: {
    members: number[];
    contributions: number[];
    rank: number;
    name: string;
    timeoutMs: number;
  }): Promise<CommBackend>;
  /** Gives back what a split prepared when this rank ends up in no group. */
  abandonSplit(contribution: number): void;
  /**
   * A backend for the survivors (ranks of this communicator, ascending), built without this
   * communicator's queues, which may be out of step after a failure. Every survivor calls it.
   */
  shrink(request: ShrinkRequest): Promise<CommBackend>;
  /**
   * Operation retry (operation-retry.ts): every rank whose call `seq` failed says whether it can
   * run it again; if every rank can, a backend of the same ranks on new connections, else why not.
   * Absent where links cannot fail while every rank lives (thread ranks).
   */
  rebuild?(request: RebuildRequest): Promise<{ readonly backend: CommBackend } | { readonly refused: string }>;
  /** Ends every wait at once (after an abort), instead of at its next check. */
  wakeAll(): void;
  close(): Promise<void>;
}

export interface ShrinkRequest {
  readonly survivors: readonly number[];
  /** Counts this communicator's shrinks, the same on every survivor. */
  readonly epoch: number;
  readonly name: string;
  readonly timeoutMs: number;
  readonly signal: AbortSignal | undefined;
  /**
   * A sibling's meeting (Communicator.sibling): every member keeps the parent open until it has
   * met, so one that destroyed the parent will never come. A shrink's survivor may destroy the
   * parent as soon as its own side of the meeting is done, so a shrink cannot tell.
   */
  readonly sibling?: boolean;
}

export interface RebuildRequest {
  /** The new backend's communicator name, the same on every rank (one per retry). */
  readonly name: string;
  /** The call that failed. */
  readonly seq: number;
  /** Why this rank cannot run it again, if it cannot: every rank hears it, and none does. */
  readonly veto: string | undefined;
  readonly timeoutMs: number;
  readonly signal: AbortSignal | undefined;
}

/**
 * A shrink cannot finish when a rank it keeps has died too, nor a sibling's meeting when a member
 * died or destroyed the communicator (it never comes): say so at once, naming it. A sibling is
 * the library's own (init's warm-up), so its message names it and gives no shrink advice.
 */
export function deadSurvivorError(
  request: Pick<ShrinkRequest, 'name' | 'sibling'>,
  rank: number,
  dead: number,
  how: 'died' | 'said goodbye' = 'died',
): TscclError {
  const gone = how === 'said goodbye' ? 'destroyed the communicator or its process ended' : undefined;
  if (request.sibling === true)
    return new TscclError(
      ErrorCode.PEER_LOST,
      `Rank ${rank} could not meet its peers for ${request.name}: rank ${dead} ${gone ?? 'died'}`,
      { rank, peer: dead, origin: dead, op: 'sibling' },
    );
  return new TscclError(
    ErrorCode.PEER_LOST,
    `shrink on rank ${rank}: rank ${dead}, kept as a survivor, ${gone ?? 'has died too'}; exclude it as well`,
    { rank, peer: dead, origin: dead, op: 'shrink' },
  );
}
