import { type ChildProcess, fork } from 'node:child_process';
import { paramInt } from '../config/params.js';
import { ErrorCode, TscclError, invalidArgument, reviveError } from '../errors.js';
import { anyAddressFor, isLoopbackAddress, loopbackFor, newJobToken } from '../security/job-token.js';
import { TcpStoreServer } from '../store/tcp-store-server.js';
import { MAX_PORT, isPort } from '../job/env-job.js';
import { newJobId } from '../debug/flight-recorder.js';
import { inheritedNodeFlags } from '../job/node-flags.js';
import { processRankCompileFlags } from '../job/rank-compile.js';
import { processRankHeapFlags } from '../job/rank-heap.js';
import { JobFailure } from './job-failure.js';
import type { RankOutcomeMessage } from './rank-script.js';
import { type RankOutcome, type RunResult, forwardLines, jobResult, resolveScript, run } from './run.js';

export interface LaunchOptions {
  script: string;
  args?: string[];
  /** Ranks on this node. */
  nprocPerNode: number;
  nnodes?: number;
  nodeRank?: number;
  /** Where node 0's launcher serves the store (default 127.0.0.1). */
  masterAddr?: string;
  /** Default 29500 when several nodes meet; a free port on one node. */
  masterPort?: number;
  /** 'processes' (default): one process per rank, meeting over TCP; 'threads': worker threads sharing memory (one node). */
  mode?: 'processes' | 'threads';
  /** With processes: thread ranks per process, sharing memory inside it (default 1). */
  threadsPerProc?: number;
  output?: 'prefix' | 'inherit' | 'silent';
  timeoutMs?: number;
  graceMs?: number;
  env?: NodeJS.ProcessEnv;
  signal?: AbortSignal;
}

const processEntry = new URL('./process-entry.js', import.meta.url);

/** What a process running several thread ranks reports. */
interface ThreadResults {
  type: 'results';
  ranks: { rank: number; ok: boolean; result?: unknown; error?: unknown }[];
}

/**
 * Starts this node's ranks of a job, as torchrun does: each process gets RANK, WORLD_SIZE,
 * LOCAL_RANK, LOCAL_WORLD_SIZE, MASTER_ADDR and MASTER_PORT; node 0's launcher serves the store
 * and, on a single node, makes the job token. If a rank fails, the others are stopped after the
 * grace period, and the promise rejects naming the rank and what it died of.
 */
export async function launch(options: LaunchOptions): Promise<RunResult> {
  const nnodes = options.nnodes ?? 1;
  const nodeRank = options.nodeRank ?? 0;
  const perNode = options.nprocPerNode;
  if (!Number.isInteger(perNode) || perNode < 1)
    throw invalidArgument(`--nproc-per-node must be a positive integer, got ${String(perNode)}`, {
      argument: 'nprocPerNode',
    });
  if (!Number.isInteger(nnodes) || nnodes < 1 || !Number.isInteger(nodeRank) || nodeRank < 0 || nodeRank >= nnodes) {
    throw invalidArgument(`--node-rank ${nodeRank} must be in [0, ${nnodes - 1}] for --nnodes ${nnodes}`, {
      argument: 'nodeRank',
    });
  }
  if (options.masterPort !== undefined && !isPort(options.masterPort, 0)) {
    throw invalidArgument(`--master-port must be a port from 0 to ${MAX_PORT}, got ${String(options.masterPort)}`, {
      argument: 'masterPort',
    });
  }
  const threads = options.threadsPerProc ?? 1;
  if (!Number.isInteger(threads) || threads < 1)
    throw invalidArgument(`--threads-per-proc must be a positive integer, got ${String(threads)}`, {
      argument: 'threadsPerProc',
    });
  if ((options.mode ?? 'processes') === 'threads') {
    if (threads > 1)
      throw invalidArgument(
        '--threads-per-proc applies to --mode processes; --mode threads runs every rank as a thread of one process',
        { argument: 'threadsPerProc' },
      );
    if (nnodes > 1)
      throw invalidArgument('--mode threads runs one node; several nodes need --mode processes', { argument: 'mode' });
    return run({
      ranks: perNode,
      script: options.script,
      args: options.args,
      output: options.output,
      timeoutMs: options.timeoutMs,
      graceMs: options.graceMs,
      env: options.env,
      signal: options.signal,
    });
  }
  const script = resolveScript(options.script);
  const env = options.env ?? process.env;
  const masterAddr = options.masterAddr ?? '127.0.0.1';
  const loopback = isLoopbackAddress(masterAddr) || masterAddr === 'localhost';
  const token = env.TSCCL_JOB_TOKEN || (nnodes === 1 ? newJobToken() : undefined);
  if (token === undefined && !loopback && env.TSCCL_ALLOW_INSECURE !== '1') {
    throw invalidArgument(
      'A job on several nodes needs TSCCL_JOB_TOKEN, the same secret on every node (or TSCCL_ALLOW_INSECURE=1)',
      { argument: 'TSCCL_JOB_TOKEN' },
    );
  }
  let server: TcpStoreServer | undefined;
  let masterPort = options.masterPort ?? (nnodes > 1 ? 29500 : 0);
  if (nodeRank === 0) {
    server = await TcpStoreServer.listen({
      host: loopback ? loopbackFor(masterAddr) : anyAddressFor(masterAddr),
      port: masterPort,
      token,
      allowInsecureRemote: env.TSCCL_ALLOW_INSECURE === '1',
    });
    masterPort = server.port;
  }
  const size = nnodes * perNode;
  // Nodes name the job alike without talking: by the store's address, which they share.
  const job = env.TSCCL_JOB_ID || (nnodes > 1 ? `${masterAddr}-${masterPort}` : newJobId());
  const graceMs = options.graceMs ?? paramInt('TSCCL_RANK_GRACE_MS');
  const outcomes = new Map<number, RankOutcome>();
  const children: ChildProcess[] = [];
  const signalAll = (signal: NodeJS.Signals) => {
    for (const c of children) if (c.exitCode === null && c.signalCode === null) c.kill(signal);
  };
  // An aborted job's ranks get SIGTERM first, as torchrun forwards it, and SIGKILL after the grace.
  const failure = new JobFailure({
    stopAll: () => signalAll('SIGKILL'),
    terminateAll: () => signalAll('SIGTERM'),
    graceMs,
    signal: options.signal,
  });
  // The ranks write their flight records on SIGUSR1; sent to the launcher, it reaches them all.
  const forwardDump = () => signalAll('SIGUSR1');
  process.on('SIGUSR1', forwardDump);
  const rankFlags = inheritedNodeFlags();
  const execArgv = [
    ...process.execArgv,
    ...processRankHeapFlags(rankFlags),
    ...processRankCompileFlags(perNode, rankFlags, env),
  ];
  const failJob = (rank: number) => failure.rankFailed(rank);
  try {
    await Promise.all(
      Array.from({ length: perNode }, (_, local) => {
        const rank = nodeRank * perNode + local;
        const mode = options.output ?? 'prefix';
        const child = fork(processEntry, [script, ...(options.args ?? [])], {
          execArgv,
          env: {
            ...env,
            RANK: String(rank),
            WORLD_SIZE: String(size),
            LOCAL_RANK: String(local),
            LOCAL_WORLD_SIZE: String(perNode),
            MASTER_ADDR: masterAddr,
            MASTER_PORT: String(masterPort),
            TSCCL_STORE_HOSTED: '1',
            TSCCL_JOB_ID: job.replace(/[^A-Za-z0-9._-]/g, '_'),
            ...(token ? { TSCCL_JOB_TOKEN: token } : {}),
            ...(options.timeoutMs ? { TSCCL_TIMEOUT_MS: String(options.timeoutMs) } : {}),
            TSCCL_THREADS_PER_PROC: String(threads),
            // Thread ranks inside the process stop their siblings after the same grace as this launcher.
            TSCCL_RANK_GRACE_MS: String(graceMs),
          },
          stdio: mode === 'inherit' ? ['ignore', 'inherit', 'inherit', 'ipc'] : ['ignore', 'pipe', 'pipe', 'ipc'],
        });
        children.push(child);
        if (mode === 'prefix') {
          // Thread ranks inside the process prefix their own lines with their job rank.
          const prefix = threads > 1 ? '' : `[${rank}] `;
          forwardLines(child.stdout!, process.stdout, prefix);
          forwardLines(child.stderr!, process.stderr, prefix);
        } else if (mode === 'silent') {
          child.stdout!.resume();
          child.stderr!.resume();
        }
        return new Promise<void>((done) => {
          const jobRanks = Array.from({ length: threads }, (_, t) => rank * threads + t);
          child.on('message', (message: RankOutcomeMessage | ThreadResults) => {
            if (message.type === 'result') outcomes.set(rank, { rank, ok: true, result: message.result });
            else if (message.type === 'error') {
              outcomes.set(rank, { rank, ok: false, error: reviveError(message.error) });
              failJob(rank);
            } else {
              for (const o of message.ranks)
                outcomes.set(o.rank, {
                  rank: o.rank,
                  ok: o.ok,
                  result: o.result,
                  error: o.error === undefined ? undefined : reviveError(o.error),
                });
              const failed = message.ranks.find((o) => !o.ok);
              if (failed !== undefined) failJob(failed.rank);
            }
          });
          child.on('exit', (code, signal) => {
            const silent = jobRanks.filter((r) => outcomes.get(r) === undefined);
            if (silent.length > 0 || (code !== 0 && jobRanks.every((r) => outcomes.get(r)!.ok))) {
              const what = `exited with ${signal !== null ? `signal ${signal}` : `code ${code}`}`;
              for (const r of silent.length > 0 ? silent : [jobRanks[0]]) {
                outcomes.set(r, {
                  rank: r,
                  ok: false,
                  error: new TscclError(ErrorCode.RANK_FAILED, `Rank ${r} ${what}`, { rank: r, exitCode: code }),
                });
              }
              failJob(silent[0] ?? jobRanks[0]);
            }
            done();
          });
        });
      }),
    );
  } finally {
    process.off('SIGUSR1', forwardDump);
    failure.dispose();
    await server?.close();
  }
  const finished = [...outcomes.values()].sort((a, b) => a.rank - b.rank);
  return jobResult(finished, failure.first, options.signal);
}
