import { paramInt } from '../config/params.js';
import { ErrorCode, TscclError } from '../errors.js';
import { threadRankBootstrap } from '../launch/bootstrap.js';
import { Arena } from '../memory/arena.js';
import { Communicator } from './communicator.js';

export interface InitOptions {
  /** Default timeout of every call on the world communicator (default TSCCL_TIMEOUT_MS). */
  timeoutMs?: number;
}

let world: Communicator | undefined;

/**
 * The world communicator of this rank. Inside a rank started by `tsccl run` (or `run()`), rank
 * and size come from the launcher; in a plain script it is a world of one rank, so the same code
 * runs unchanged without a launcher. Calling it again returns the same communicator.
 */
export async function init(options: InitOptions = {}): Promise<Communicator> {
  if (world !== undefined) return world;
  const defaultTimeoutMs = options.timeoutMs ?? paramInt('TSCCL_TIMEOUT_MS');
  const boot = threadRankBootstrap();
  if (boot !== undefined) {
    world = new Communicator({
      arena: Arena.attach(boot.memory), rank: boot.rank, mailboxes: boot.worldMailboxes, name: 'world',
      defaultTimeoutMs: boot.timeoutMs ?? defaultTimeoutMs, threadsInProcess: boot.size,
    });
    return world;
  }
  const size = Number(process.env.WORLD_SIZE ?? process.env.OMPI_COMM_WORLD_SIZE ?? process.env.SLURM_NTASKS ?? 1);
  if (size > 1) {
    throw new TscclError(ErrorCode.NOT_SUPPORTED,
      `init() found a ${size}-rank job in the environment, but ranks in separate processes need the TCP transport, which this version does not have yet; start thread ranks with \`tsccl run -n ${size}\``,
      { argument: 'WORLD_SIZE' });
  }
  const arena = Arena.create();
  world = new Communicator({ arena, rank: 0, mailboxes: [Communicator.allocateMailbox(arena, 1)], name: 'world', defaultTimeoutMs, threadsInProcess: 1 });
  return world;
}
