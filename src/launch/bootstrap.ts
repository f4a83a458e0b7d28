import { workerData } from 'node:worker_threads';

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
}

export function threadRankBootstrap(): ThreadRankBootstrap | undefined {
  const data = workerData as { tsccl?: ThreadRankBootstrap } | null | undefined;
  return data?.tsccl?.kind === 'tsccl-thread-rank' ? data.tsccl : undefined;
}
