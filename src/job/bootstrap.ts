import { workerData } from 'node:worker_threads';
import type { ChoiceTable } from '../tuner/select.js';
import type { EnvJob } from './env-job.js';

/** What a thread rank receives from the launcher through workerData. */
export interface ThreadRankBootstrap {
  readonly kind: 'tsccl-thread-rank';
  readonly rank: number;
  readonly size: number;
  readonly memory: WebAssembly.Memory;
  /** Byte offsets of every rank's world mailbox in the arena. */
  readonly worldMailboxes: readonly number[];
  readonly script: string;
  readonly args: readonly string[];
  readonly timeoutMs?: number;
  /**
   * Set when this process is one of several of a job (threads per process): `rank` and `size`
   * above are then the thread's place in its process, and this its place in the job.
   */
  readonly global?: GlobalPlacement;
  /** The tuner's size classes for the world, ranked once by the starting thread (comm/thread-choices.ts). */
  readonly choices?: ChoiceTable;
}

export interface GlobalPlacement {
  /** Job rank of this process's first thread; thread t is rankOffset + t. */
  readonly rankOffset: number;
  readonly size: number;
  readonly threadsPerProcess: number;
  /** Where the job's store is and how to prove the token. */
  readonly job: EnvJob;
}

export function threadRankBootstrap(): ThreadRankBootstrap | undefined {
  const data = workerData as { tsccl?: ThreadRankBootstrap } | null | undefined;
  return data?.tsccl?.kind === 'tsccl-thread-rank' ? data.tsccl : undefined;
}
