import type { GlobalPlacement } from '../job/bootstrap.js';
import type { Arena } from '../memory/arena.js';
import { MixedBackend } from './mixed-backend.js';
import type { ShmBackend } from './shm-backend.js';
import { connectTcpWorld } from './tcp-world.js';

/** The process of every job rank: thread t of the process whose first rank is r0 is job rank r0 + t. */
export function processOfRanks(global: GlobalPlacement): number[] {
  return Array.from({ length: global.size }, (_, r) => Math.floor(r / global.threadsPerProcess));
}

/**
 * A communicator of every thread rank of a job of several processes: `shm` joins the threads of
 * this one, a TCP mesh through the job's store (named `where.name`, if another mesh of the same
 * ranks exists) joins the processes.
 */
export async function joinProcesses(
  shm: ShmBackend,
  global: GlobalPlacement,
  where: { rank: number; arena: Arena; defaultTimeoutMs: number; name?: string; serveStore?: boolean },
): Promise<MixedBackend> {
  const tcp = await connectTcpWorld(global.job, { ...where, size: global.size });
  return new MixedBackend(shm, tcp, processOfRanks(global));
}
