import { invalidArgument } from '../errors.js';

/**
 * Where a process rank learns who it is: torchrun's variables first, then Open MPI's and Slurm's,
 * so the same script runs under `tsccl launch`, torchrun habits, `mpirun` or `srun`.
 */
export interface EnvJob {
  readonly rank: number;
  readonly size: number;
  readonly localRank: number;
  readonly localSize: number;
  readonly masterAddr: string;
  readonly masterPort: number;
  /** The launcher already serves the store at MASTER_ADDR:MASTER_PORT; otherwise rank 0 does. */
  readonly storeHosted: boolean;
  readonly token: string | undefined;
  readonly allowInsecure: boolean;
  /** Which variables described the job, for messages. */
  readonly source: 'torchrun' | 'mpirun' | 'slurm';
}

const int = (env: NodeJS.ProcessEnv, name: string): number | undefined => {
  const text = env[name];
  if (text === undefined || text === '') return undefined;
  const value = Number(text);
  if (!Number.isInteger(value) || value < 0)
    throw invalidArgument(`${name}=${text} must be a non-negative integer`, { argument: name });
  return value;
};

export const MAX_PORT = 65535;

/** Is `value` a TCP port number of at least `lowest` (0 where "any free port" makes sense)? */
export function isPort(value: unknown, lowest: 0 | 1): value is number {
  return Number.isInteger(value) && (value as number) >= lowest && (value as number) <= MAX_PORT;
}

/** TSCCL_STORE's host:port ([v6]:port for IPv6); the port must be one a store can listen on. */
function storeAddress(text: string): { masterAddr: string; masterPort: number } {
  const at = text.lastIndexOf(':');
  const host = text.slice(0, Math.max(at, 0)).replace(/^\[|\]$/g, '');
  const portText = text.slice(at + 1);
  const port = Number(portText);
  if (at < 0 || host === '' || !/^\d+$/.test(portText) || !isPort(port, 1)) {
    throw invalidArgument(
      `TSCCL_STORE=${text} must be host:port with a port from 1 to ${MAX_PORT}, e.g. 10.0.0.1:29500 or [fe80::1]:29500`,
      { argument: 'TSCCL_STORE' },
    );
  }
  return { masterAddr: host, masterPort: port };
}

/** The job described by the environment, or undefined when it describes none. */
export function jobFromEnv(env: NodeJS.ProcessEnv = process.env): EnvJob | undefined {
  const sources = [
    {
      source: 'torchrun' as const,
      rank: 'RANK',
      size: 'WORLD_SIZE',
      localRank: 'LOCAL_RANK',
      localSize: 'LOCAL_WORLD_SIZE',
    },
    {
      source: 'mpirun' as const,
      rank: 'OMPI_COMM_WORLD_RANK',
      size: 'OMPI_COMM_WORLD_SIZE',
      localRank: 'OMPI_COMM_WORLD_LOCAL_RANK',
      localSize: 'OMPI_COMM_WORLD_LOCAL_SIZE',
    },
    {
      source: 'slurm' as const,
      rank: 'SLURM_PROCID',
      size: 'SLURM_NTASKS',
      localRank: 'SLURM_LOCALID',
      localSize: 'SLURM_NTASKS_PER_NODE',
    },
  ];
  const found = sources.find((s) => env[s.rank] !== undefined && env[s.size] !== undefined);
  if (found === undefined) {
    // Half of torchrun's description would run a world of one. (Slurm's SLURM_NTASKS alone is an
    // allocation's shell, not a rank, so only torchrun's pair is held to this.)
    const half = sources[0];
    if (env[half.rank] !== undefined || env[half.size] !== undefined) {
      const [set, unset] = env[half.rank] !== undefined ? [half.rank, half.size] : [half.size, half.rank];
      throw invalidArgument(
        `${set} is set but ${unset} is not: ${half.source}'s variables describe a job only together`,
        { argument: unset },
      );
    }
    return undefined;
  }
  const rank = int(env, found.rank)!;
  const size = int(env, found.size)!;
  if (size < 1 || rank >= size)
    throw invalidArgument(`${found.rank}=${rank} must be below ${found.size}=${size}`, { argument: found.rank });
  let masterAddr = env.MASTER_ADDR;
  let masterPort = int(env, 'MASTER_PORT');
  if (masterPort !== undefined && !isPort(masterPort, 0))
    throw invalidArgument(`MASTER_PORT=${masterPort} must be a port, at most ${MAX_PORT}`, { argument: 'MASTER_PORT' });
  if (env.TSCCL_STORE !== undefined && env.TSCCL_STORE !== '')
    ({ masterAddr, masterPort } = storeAddress(env.TSCCL_STORE));
  if (size > 1 && (masterAddr === undefined || masterAddr === '' || masterPort === undefined)) {
    throw invalidArgument(
      `A ${size}-rank job (from ${found.source}'s ${found.rank}/${found.size}) needs MASTER_ADDR and MASTER_PORT, or TSCCL_STORE=host:port, to find its store`,
      { argument: 'MASTER_ADDR' },
    );
  }
  return {
    rank,
    size,
    localRank: int(env, found.localRank) ?? 0,
    localSize: int(env, found.localSize) ?? 1,
    masterAddr: masterAddr ?? '127.0.0.1',
    masterPort: masterPort ?? 0,
    storeHosted: env.TSCCL_STORE_HOSTED === '1',
    token: env.TSCCL_JOB_TOKEN === '' ? undefined : env.TSCCL_JOB_TOKEN,
    allowInsecure: env.TSCCL_ALLOW_INSECURE === '1',
    source: found.source,
  };
}
