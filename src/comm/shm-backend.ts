import type { Arena } from '../memory/arena.js';
import { QUEUED_CHANNELS } from '../transport/channels.js';
import { mailboxWords } from '../transport/shm/mailbox.js';
import { ShmTransport } from '../transport/shm/shm-transport.js';
import { isOversubscribed, rankSpin } from '../transport/wait.js';
import { ErrorCode, TscclError } from '../errors.js';
import { type CommBackend, type ShrinkRequest, deadSurvivorError } from './backend.js';
import { CommStatus } from './status.js';

/** Bytes of one rank's mailbox for a communicator of up to `maxRanks` ranks. */
export function mailboxBytes(maxRanks: number): number {
  return mailboxWords(maxRanks) * 4;
}

/** Allocates a zeroed mailbox in the arena; its offset is then shared with the peers. */
export function allocateMailbox(arena: Arena, maxRanks: number): number {
  const bytes = mailboxBytes(maxRanks);
  const offset = arena.allocate(bytes);
  arena.bytes(offset, bytes).fill(0);
  return offset;
}

/** Thread ranks of one process: mailboxes in the shared arena. */
export class ShmBackend implements CommBackend {
  readonly kind = 'shm' as const;
  readonly sharesMemory = true;
  readonly transport: ShmTransport;
  readonly status: CommStatus;
  readonly spinMs: number;
  readonly spinYields: boolean;
  readonly oversubscribed: boolean;
  /** Thread ranks of one process share a host. */
  readonly hosts = undefined;
  readonly machineThreads: number;
  private readonly arena: Arena;
  /** The job rank of each rank of this communicator (the launcher marks job ranks lost). */
  private readonly jobRanks: readonly number[];
  /** Byte offset of this rank's own mailbox. */
  private readonly mailbox: number;

  constructor(
    arena: Arena,
    rank: number,
    mailboxes: readonly number[],
    threadsInProcess: number,
    jobRanks: readonly number[],
  ) {
    this.arena = arena;
    this.machineThreads = threadsInProcess;
    this.jobRanks = jobRanks;
    this.mailbox = mailboxes[rank];
    const bytes = mailboxBytes(mailboxes.length);
    this.transport = new ShmTransport(arena, rank, mailboxes, bytes, QUEUED_CHANNELS);
    this.status = new CommStatus(arena.int32Covering(Math.max(...mailboxes) + bytes), mailboxes, rank);
    ({ spinMs: this.spinMs, spinYields: this.spinYields } = rankSpin(threadsInProcess));
    this.oversubscribed = isOversubscribed(threadsInProcess);
  }

  lostRank(seq: number | undefined): number | undefined {
    if (!this.arena.anyLost()) return undefined;
    const lost = this.jobRanks.findIndex(
      (j, r) => this.arena.isLost(j) && (seq === undefined || !this.status.hasEnded(r, seq)),
    );
    return lost < 0 ? undefined : lost;
  }

  prepareSplit(joins: boolean): number {
    // Sized for the parent: the new group is never larger.
    return joins ? allocateMailbox(this.arena, this.transport.nranks) : -1;
  }

  async completeSplit(split: { members: number[]; contributions: number[]; rank: number }): Promise<CommBackend> {
    return new ShmBackend(
      this.arena,
      split.rank,
      split.contributions,
      this.machineThreads,
      split.members.map((m) => this.jobRanks[m]),
    );
  }

  abandonSplit(): void {}

  /** Survivors meet through their status words: each offers a fresh mailbox for this epoch. */
  async shrink(request: ShrinkRequest): Promise<CommBackend> {
    const me = this.transport.rank;
    this.status.offerShrink(request.epoch, allocateMailbox(this.arena, request.survivors.length));
    const deadline = performance.now() + request.timeoutMs;
    for (;;) {
      const offers = request.survivors.map((r) => this.status.shrinkOffer(r, request.epoch));
      if (offers.every((o) => o !== undefined)) {
        return new ShmBackend(
          this.arena,
          request.survivors.indexOf(me),
          offers as number[],
          this.machineThreads,
          request.survivors.map((r) => this.jobRanks[r]),
        );
      }
      if (request.signal?.aborted)
        throw new TscclError(ErrorCode.ABORTED, `shrink on rank ${me} was aborted by its signal`, {
          rank: me,
          op: 'shrink',
        });
      const dead = request.survivors.find((r, i) => offers[i] === undefined && this.arena.isLost(this.jobRanks[r]));
      if (dead !== undefined) throw deadSurvivorError(request, me, dead);
      if (performance.now() > deadline) {
        const missing = request.survivors.filter((_, i) => offers[i] === undefined);
        throw new TscclError(
          ErrorCode.TIMEOUT,
          `shrink on rank ${me} timed out after ${request.timeoutMs} ms: ranks ${missing.join(', ')} did not call it`,
          { rank: me, op: 'shrink', missingRanks: missing },
        );
      }
      await new Promise((resolve) => setTimeout(resolve, 1));
    }
  }

  /** Shared-memory waits notice an abort at their next check (at most 50 ms). */
  wakeAll(): void {}

  /**
   * This rank's mailbox is reused once every member has closed: until then a peer may still post
   * into it or read its status. A member that died never closes, so then it stays.
   */
  async close(): Promise<void> {
    this.status.close();
    this.arena.freeWhen(this.mailbox, () => this.status.allClosed());
  }
}
