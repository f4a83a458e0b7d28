import { paramInt } from '../config/params.js';
import { threadRankBootstrap } from '../launch/bootstrap.js';
import { jobFromEnv } from '../launch/env-job.js';
import { createTcpWorld } from './tcp-world.js';
import { Arena } from '../memory/arena.js';
import { Communicator } from './communicator.js';
import { ShmBackend, allocateMailbox } from './shm-backend.js';

export interface InitOptions {
  /** Default timeout of every call on the world communicator (default TSCCL_TIMEOUT_MS). */
  timeoutMs?: number;
}

let world: Communicator | undefined;

/**
 * The world communicator of this rank. Inside a thread rank started by `tsccl run` (or `run()`),
 * rank and size come from the launcher; in a process started by `tsccl launch`, mpirun, srun or
 * with torchrun's variables, from the environment (ranks meet over TCP); in a plain script it is
 * a world of one rank, so the same code runs unchanged. Calling it again returns the same one.
 */
export async function init(options: InitOptions = {}): Promise<Communicator> {
  if (world !== undefined) return world;
  const defaultTimeoutMs = options.timeoutMs ?? paramInt('TSCCL_TIMEOUT_MS');
  const boot = threadRankBootstrap();
  if (boot !== undefined) {
    const arena = Arena.attach(boot.memory);
    world = new Communicator({
      arena, backend: new ShmBackend(arena, boot.rank, boot.worldMailboxes, boot.size), name: 'world',
      defaultTimeoutMs: boot.timeoutMs ?? defaultTimeoutMs,
    });
    return world;
  }
  const job = jobFromEnv();
  if (job !== undefined && job.size > 1) {
    world = await createTcpWorld(job, defaultTimeoutMs);
    return world;
  }
  const arena = Arena.create();
  world = new Communicator({ arena, backend: new ShmBackend(arena, 0, [allocateMailbox(arena, 1)], 1), name: 'world', defaultTimeoutMs });
  return world;
}
