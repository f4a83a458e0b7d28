import type { ErrorCodeValue } from '../errors.js';
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
  /** Tells the peers this rank gave up on the communicator. */
  fail(code: ErrorCodeValue, seq: number): void;
  failedPeer(): { rank: number; code: ErrorCodeValue; seq: number } | undefined;
}

/**
 * How a communicator reaches its peers: shared memory between thread ranks, or TCP between
 * processes. The communicator, executor and algorithms are the same over either.
 */
export interface CommBackend {
  readonly kind: 'shm' | 'tcp';
  readonly transport: Transport;
  readonly status: StatusBoard;
  /** How long waits spin before sleeping, in ms. */
  readonly spinMs: number;
  /** Host index of every rank, when the ranks span several hosts; undefined when they share one. */
  readonly hosts: readonly number[] | undefined;
  /** 0, or 1 + the rank whose failure ended the whole job. */
  jobAbort(): number;
  /** What this rank adds to a split's all-gather (shm: the offset of its new mailbox). */
  prepareSplit(joins: boolean): number;
  /** Builds the new communicator's backend from the members (parent ranks, in new rank order). */
  completeSplit(split: { members: number[]; contributions: number[]; rank: number; name: string; timeoutMs: number }): Promise<CommBackend>;
  /** Gives back what a split prepared when this rank ends up in no group. */
  abandonSplit(contribution: number): void;
  close(): Promise<void>;
}
