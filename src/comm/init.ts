import { paramInt } from '../config/params.js';
import { threadRankBootstrap } from '../job/bootstrap.js';
import { jobFromEnv } from '../job/env-job.js';
import { joinProcesses } from './mixed-world.js';
import { createTcpWorld } from './tcp-world.js';
import { Arena } from '../memory/arena.js';
import { checkOptions } from './call-options.js';
import { Communicator } from './communicator.js';
import { ShmBackend, allocateMailbox } from './shm-backend.js';
import { adoptThreadWorldChoices } from './thread-choices.js';
import { warmUp } from './warm-up.js';

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
  world ??= (await openWorld({ defaultTimeoutMs })).comm;
  return world;
}

/**
 * Builds this rank's world communicator and names the arena its buffers live in: init's work,
 * and the progress engine's, whose thread drives the rank's calls beside the rank's own thread
 * (so the rank's threads count twice against the cores: `busyThreadsPerRank`).
 */
export async function openWorld(where: {
  defaultTimeoutMs: number;
  busyThreadsPerRank?: number;
}): Promise<{ comm: Communicator; arena: Arena }> {
  const world = await connectWorld(where);
  try {
    await warmUp(world.comm);
  } catch (err) {
    // Peers may be past the step that failed here: closing the world's links tells their calls
    // on it that this rank is gone (PEER_LOST at once, not a timeout).
    await world.comm.destroy().catch(() => undefined);
    throw err;
  }
  return world;
}

/** The world communicator of this rank, as its launcher or environment describes it. */
async function connectWorld(where: {
  defaultTimeoutMs: number;
  busyThreadsPerRank?: number;
}): Promise<{ comm: Communicator; arena: Arena }> {
  const { defaultTimeoutMs } = where;
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
      boot.size * (where.busyThreadsPerRank ?? 1),
      boot.worldMailboxes.map((_, r) => offset + r),
    );
    if (global === undefined) {
      adoptThreadWorldChoices(boot.size, boot.choices);
      return { comm: new Communicator({ arena, backend: shm, name: 'world', defaultTimeoutMs: timeoutMs }), arena };
    }
    // Threads of one of several processes: shared memory inside the process, TCP between them.
    const backend = await joinProcesses(shm, global, {
      rank: global.rankOffset + boot.rank,
      arena,
      defaultTimeoutMs: timeoutMs,
    });
    return { comm: new Communicator({ arena, backend, name: 'world', defaultTimeoutMs: timeoutMs }), arena };
  }
  const arena = Arena.create();
  const job = jobFromEnv();
  if (job !== undefined && job.size > 1) return { comm: await createTcpWorld(job, { defaultTimeoutMs, arena }), arena };
  const backend = new ShmBackend(arena, 0, [allocateMailbox(arena, 1)], 1, [0]);
  return { comm: new Communicator({ arena, backend, name: 'world', defaultTimeoutMs }), arena };
}
