import { paramInt } from '../config/params.js';
import { threadRankBootstrap } from '../job/bootstrap.js';
import { jobFromEnv } from '../job/env-job.js';
import { MixedBackend } from './mixed-backend.js';
import { connectTcpWorld, createTcpWorld } from './tcp-world.js';
import { Arena } from '../memory/arena.js';
import { checkOptions } from './call-options.js';
import { Communicator } from './communicator.js';
import { ShmBackend, allocateMailbox } from './shm-backend.js';
import { adoptThreadWorldChoices } from './thread-choices.js';

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
  const { timeoutMs: defaultTimeoutMs } = checkOptions('init', options, {
    defaultTimeoutMs: paramInt('TSCCL_TIMEOUT_MS'),
  });
  if (world !== undefined) return world;
  const boot = threadRankBootstrap();
  if (boot !== undefined) {
    const arena = Arena.attach(boot.memory);
    const timeoutMs = boot.timeoutMs ?? defaultTimeoutMs;
    const global = boot.global;
    const offset = global?.rankOffset ?? 0;
    const shm = new ShmBackend(
      arena,
      boot.rank,
      boot.worldMailboxes,
      boot.size,
      boot.worldMailboxes.map((_, r) => offset + r),
    );
    if (global === undefined) {
      adoptThreadWorldChoices(boot.size, boot.choices);
      world = new Communicator({ arena, backend: shm, name: 'world', defaultTimeoutMs: timeoutMs });
      return world;
    }
    // Threads of one of several processes: shared memory inside the process, TCP between them.
    const tcp = await connectTcpWorld(global.job, {
      rank: global.rankOffset + boot.rank,
      size: global.size,
      arena,
      defaultTimeoutMs: timeoutMs,
    });
    const processOf = Array.from({ length: global.size }, (_, r) => Math.floor(r / global.threadsPerProcess));
    world = new Communicator({
      arena,
      backend: new MixedBackend(shm, tcp, processOf),
      name: 'world',
      defaultTimeoutMs: timeoutMs,
    });
    return world;
  }
  const job = jobFromEnv();
  if (job !== undefined && job.size > 1) {
    world = await createTcpWorld(job, defaultTimeoutMs);
    return world;
  }
  const arena = Arena.create();
  world = new Communicator({
    arena,
    backend: new ShmBackend(arena, 0, [allocateMailbox(arena, 1)], 1, [0]),
    name: 'world',
    defaultTimeoutMs,
  });
  return world;
}
