import { existsSync } from 'node:fs';
import { resolve } from 'node:path';
import { createInterface } from 'node:readline';
import type { Readable, Writable } from 'node:stream';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { Worker, isMainThread } from 'node:worker_threads';
import { allocateMailbox } from '../comm/shm-backend.js';
import { threadWorldChoices } from '../comm/thread-choices.js';
import { paramInt } from '../config/params.js';
import { ErrorCode, TscclError, invalidArgument, reviveError } from '../errors.js';
import { keepArena, takeArena } from './arena-pool.js';
import type { GlobalPlacement, ThreadRankBootstrap } from '../job/bootstrap.js';
import { inheritedNodeFlags } from '../job/node-flags.js';
import { compileThreadRanksOnThemselves } from '../job/rank-compile.js';
import { rankResourceLimits } from '../job/rank-heap.js';
import { newJobId } from '../debug/flight-recorder.js';
import { JobFailure } from './job-failure.js';
import { DUMP_FLIGHT_RECORDS } from './rank-script.js';

export interface RunOptions {
  /** Number of thread ranks. */
  ranks: number;
  /** Path or file: URL of the ES module each rank runs. */
  script: string;
  /** Passed to the script's default export as `args`. */
  args?: string[];
  /** 'prefix' (default): each line of a rank's output starts with "[rank] "; 'inherit': as is; 'silent': dropped. */
  output?: 'prefix' | 'inherit' | 'silent';
  /** Default per-call timeout inside the ranks, in ms. */
  timeoutMs?: number;
  /** How long survivors get to end after a rank fails, before they are stopped (default TSCCL_RANK_GRACE_MS). */
  graceMs?: number;
  signal?: AbortSignal;
  /** Environment of the ranks (default: this process's). */
  env?: NodeJS.ProcessEnv;
  /** These threads are one process's share of a larger job (see GlobalPlacement). */
  global?: GlobalPlacement;
}

export interface RankOutcome {
  readonly rank: number;
  readonly ok: boolean;
  readonly result?: unknown;
  readonly error?: TscclError | Error;
}

export interface RunResult {
  /** Each rank's result, by rank. */
  readonly results: unknown[];
  readonly ranks: RankOutcome[];
}

/** The compiled worker entry; resolved in one place so tests and the CLI find it alike. */
export function workerEntryUrl(): URL {
  return new URL('./worker-entry.js', import.meta.url);
}

/**
 * Starts `ranks` worker-thread ranks of one job, all sharing one arena (the last finished
 * job's, reused: launch/arena-pool.ts). Resolves with every
 * rank's result; if any rank fails, the others are told at once (their pending calls end with
 * TSCCL_ERR_PEER_LOST), are stopped if they do not end within the grace period, and the
 * promise rejects with TSCCL_ERR_RANK_FAILED naming the first rank that failed.
 */
export async function run(options: RunOptions): Promise<RunResult> {
  const { ranks } = options;
  if (!Number.isInteger(ranks) || ranks < 1)
    throw invalidArgument(`ranks must be a positive integer, got ${String(ranks)}`, { argument: 'ranks' });
  const script = resolveScript(options.script);
  const graceMs = options.graceMs ?? paramInt('TSCCL_RANK_GRACE_MS');
  const arena = takeArena();
  const worldMailboxes = Array.from({ length: ranks }, () => allocateMailbox(arena, ranks));
  const outcomes: (RankOutcome | undefined)[] = new Array(ranks).fill(undefined);
  // Every rank of the job names it alike in its flight records and trace directory.
  const baseEnv = options.env ?? process.env;
  const env = baseEnv.TSCCL_JOB_ID ? baseEnv : { ...baseEnv, TSCCL_JOB_ID: newJobId() };

  compileThreadRanksOnThemselves(ranks, inheritedNodeFlags(), baseEnv);
  // Ranked here once for every rank; threads of a multi-process job run no cost model.
  const choices = options.global === undefined ? threadWorldChoices(ranks) : undefined;
  const workers = Array.from({ length: ranks }, (_, rank) => {
    const tsccl: ThreadRankBootstrap = {
      kind: 'tsccl-thread-rank',
      rank,
      size: ranks,
      memory: arena.memory,
      worldMailboxes,
      script,
      args: options.args ?? [],
      timeoutMs: options.timeoutMs,
      global: options.global,
      choices,
    };
    const shown = (options.global?.rankOffset ?? 0) + rank;
    const mode = options.output ?? 'prefix';
    const worker = new Worker(workerEntryUrl(), {
      workerData: { tsccl },
      resourceLimits: rankResourceLimits(),
      env,
      stdout: mode !== 'inherit',
      stderr: mode !== 'inherit',
    });
    if (mode === 'prefix') {
      forwardLines(worker.stdout, process.stdout, `[${shown}] `);
      forwardLines(worker.stderr, process.stderr, `[${shown}] `);
    } else if (mode === 'silent') {
      worker.stdout.resume();
      worker.stderr.resume();
    }
    return worker;
  });

  const failure = new JobFailure({
    stopAll: () => {
      for (const w of workers) void w.terminate();
    },
    graceMs,
    signal: options.signal,
  });
  // Signals reach only the main thread: SIGUSR1 is passed on to every rank, which writes its flight records.
  const forwardDump = () => {
    for (const w of workers) w.postMessage(DUMP_FLIGHT_RECORDS);
  };
  if (isMainThread) process.on('SIGUSR1', forwardDump);
  const failJob = (rank: number) => {
    // Every rank that dies is marked lost, not only the first: communicators that include it fail
    // at once, and survivors can shrink it away.
    arena.markLost(rank);
    failure.rankFailed(rank);
  };

  await Promise.all(
    workers.map(
      (worker, local) =>
        new Promise<void>((done) => {
          const rank = (options.global?.rankOffset ?? 0) + local;
          worker.on('message', (message: { type: string; result?: unknown; error?: unknown }) => {
            if (message.type === 'result') outcomes[local] = { rank, ok: true, result: message.result };
            else if (message.type === 'error') {
              outcomes[local] = { rank, ok: false, error: reviveError(message.error) };
              failJob(rank);
            }
          });
          worker.on('error', (err) => {
            outcomes[local] ??= { rank, ok: false, error: err };
            failJob(rank);
          });
          worker.on('exit', (code) => {
            if (outcomes[local] === undefined) {
              outcomes[local] = {
                rank,
                ok: false,
                error: new TscclError(ErrorCode.RANK_FAILED, `Rank ${rank} exited with code ${code} before finishing`, {
                  rank,
                }),
              };
              failJob(rank);
            }
            done();
          });
        }),
    ),
  );
  process.off('SIGUSR1', forwardDump);
  failure.dispose();
  const verdict = jobResult(outcomes as RankOutcome[], failure.first, options.signal);
  // Every rank's thread has exited: nobody maps the arena any more (a failed job's is left to the collector).
  keepArena(arena, verdict.results);
  return verdict;
}

/**
 * The job's verdict once every rank has ended: every result, or TSCCL_ERR_RANK_FAILED naming the
 * first rank that failed (-1: the launcher's signal aborted the job).
 */
export function jobResult(
  finished: RankOutcome[],
  firstFailure: number | undefined,
  signal: AbortSignal | undefined,
): RunResult {
  if (firstFailure === undefined) return { results: finished.map((o) => o.result), ranks: finished };
  if (firstFailure < 0)
    throw new TscclError(ErrorCode.ABORTED, `The job was aborted by its signal: ${String(signal?.reason)}`, {
      ranks: finished,
    });
  const first = finished.find((o) => o.rank === firstFailure)!;
  const others = finished.filter((o) => o.rank !== firstFailure && !o.ok).map((o) => o.rank);
  throw new TscclError(
    ErrorCode.RANK_FAILED,
    `Rank ${firstFailure} failed: ${first.error?.message ?? 'unknown error'}${others.length > 0 ? ` (ranks ${others.join(', ')} ended because of it)` : ''}`,
    { rank: firstFailure, ranks: finished },
  );
}

/**
 * The file: URL of a rank's script, refused before any rank starts when it cannot load: missing,
 * or TypeScript on a Node that does not strip types (each rank would fail with Node's
 * ERR_UNKNOWN_FILE_EXTENSION instead).
 */
export function resolveScript(script: string): string {
  if (typeof script !== 'string' || script === '')
    throw invalidArgument('script must be the path of an ES module', { argument: 'script' });
  const url = script.startsWith('file:') ? new URL(script) : pathToFileURL(resolve(script));
  if (!existsSync(fileURLToPath(url))) throw invalidArgument(`script ${script} does not exist`, { argument: 'script' });
  if (/\.[mc]?ts$/i.test(url.pathname) && !nodeLoadsTypeScript()) {
    throw invalidArgument(
      `script ${script} is TypeScript, which Node ${process.version} does not run: compile it first (tsc) and run the .js it writes, or use Node >= 22.6 with --experimental-strip-types (on by default from Node 23.6 and 22.18)`,
      { argument: 'script' },
    );
  }
  return url.href;
}

/**
 * Whether the ranks (which inherit this process's flags) can load .ts modules: Node strips types
 * (`process.features.typescript` from Node 22.10, the flag before it), or a loader hook such as
 * tsx's (`--import tsx`) may compile them.
 */
function nodeLoadsTypeScript(): boolean {
  if ((process.features as { typescript?: string | false }).typescript) return true;
  return inheritedNodeFlags().some((flag) =>
    /^(--experimental-strip-types|--experimental-transform-types|--import|--loader|--experimental-loader|--require|-r)(=|$)/.test(
      flag,
    ),
  );
}

export function forwardLines(from: Readable, to: Writable, prefix: string): void {
  createInterface({ input: from, crlfDelay: Infinity }).on('line', (line) => to.write(`${prefix}${line}\n`));
}
