import type { Arena } from '../memory/arena.js';
import { JOB_ABORT } from '../memory/arena.js';
import { CHANNELS, mailboxWords } from '../transport/shm/mailbox.js';
import { ShmTransport } from '../transport/shm/shm-transport.js';
import { spinBudgetMs } from '../transport/wait.js';
import type { CommBackend } from './backend.js';
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
  readonly transport: ShmTransport;
  readonly status: CommStatus;
  readonly spinMs: number;
  /** Thread ranks of one process share a host. */
  readonly hosts = undefined;
  private readonly arena: Arena;
  private readonly threadsInProcess: number;

  constructor(arena: Arena, rank: number, mailboxes: readonly number[], threadsInProcess: number) {
    this.arena = arena;
    this.threadsInProcess = threadsInProcess;
    const bytes = mailboxBytes(mailboxes.length);
    this.transport = new ShmTransport(arena, rank, mailboxes, bytes, CHANNELS);
    this.status = new CommStatus(arena.int32Covering(Math.max(...mailboxes) + bytes), mailboxes, rank);
    this.spinMs = spinBudgetMs(threadsInProcess);
  }

  jobAbort(): number {
    return Atomics.load(this.arena.controlWords, JOB_ABORT);
  }

  prepareSplit(joins: boolean): number {
    // Sized for the parent: the new group is never larger.
    return joins ? allocateMailbox(this.arena, this.transport.nranks) : -1;
  }

  async completeSplit(split: { contributions: number[]; rank: number }): Promise<CommBackend> {
    return new ShmBackend(this.arena, split.rank, split.contributions, this.threadsInProcess);
  }

  abandonSplit(): void {}

  /** Mailboxes stay: a peer may still post into one after this rank is done. */
  async close(): Promise<void> {}
}
