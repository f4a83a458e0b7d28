import { randomBytes } from 'node:crypto';
import { mkdirSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { isMainThread } from 'node:worker_threads';
import { paramInt, paramString } from '../config/params.js';
import { log } from '../log.js';
import type { RecoveryCounts } from '../transport/transport.js';
import { epochMs } from './epoch-clock.js';

/**
 * The last operations of each communicator of this rank, kept in a ring buffer so that after a
 * hang or a failure every rank can say what it was doing. Dumped as JSON, one file per rank,
 * on a timeout or abort (and on SIGUSR1 in process ranks); `tsccl trace <dir>` reads them all.
 */
export interface OpRecord {
  /** A collective's sequence number in its communicator; a send's or receive's count with its peer in that direction. */
  seq: number;
  op: string;
  /** A send's or receive's peer; absent for collectives. */
  peer?: number;
  dtype: string;
  count: number;
  root: number;
  redop: string;
  algorithm?: string;
  /** The wire format of a compressed call (int8/256), and the bytes its data took encoded. */
  compression?: string;
  wireBytes?: number;
  /** Shadow mode: the largest error of the compressed result over the largest exact value. */
  shadowError?: number;
  /** How often the call was run again after a failure (operation retry). */
  retries?: number;
  state: 'queued' | 'running' | 'done' | 'failed';
  queuedAt: number;
  startedAt?: number;
  endedAt?: number;
  error?: string;
}

export interface CommRecord {
  readonly name: string;
  readonly rank: number;
  readonly size: number;
  readonly records: OpRecord[];
  /** What this rank's links to each peer recovered from (TCP resend), for peers with anything to report. */
  readonly recoveries?: readonly ({ readonly rank: number } & RecoveryCounts)[];
}

export interface RankDump {
  /** The job the records belong to (absent in records written before jobs were named). */
  readonly job?: string;
  /** Ranks of the job's world. */
  readonly size?: number;
  readonly rank: number;
  readonly reason: string;
  readonly time: string;
  readonly comms: CommRecord[];
}

/**
 * A record as the ring keeps it while its operation runs: its times are always numbers, NaN for
 * one not reached yet, so V8 stores each call's times in place (a field that holds undefined
 * boxes every number stored in it, garbage on every small call). snapshot() gives OpRecords.
 */
export interface LiveRecord extends Omit<OpRecord, 'startedAt' | 'endedAt'> {
  /** When the operation started running (epochMs), NaN before. */
  startedAt: number;
  /** When it ended (epochMs), NaN before. */
  endedAt: number;
}

/** A live record's time as an OpRecord gives it: undefined where not reached yet. */
const reached = (ms: number): number | undefined => (Number.isNaN(ms) ? undefined : ms);

/** What a record starts with; record() copies it, so a caller may hand the same object each time. */
export type RecordEntry = Pick<OpRecord, 'seq' | 'op' | 'dtype' | 'count' | 'root' | 'redop' | 'peer'>;

export class FlightRecorder {
  /** Circular: `next` is where the next record goes; the oldest is overwritten once full. */
  private readonly ring: LiveRecord[] = [];
  private next = 0;
  private readonly capacity: number;
  readonly name: string;
  readonly rank: number;
  readonly size: number;
  private recoveries: (() => readonly ({ readonly rank: number } & RecoveryCounts)[]) | undefined;

  constructor(name: string, rank: number, size: number, capacity = paramInt('TSCCL_FLIGHT_RECORDER_ENTRIES')) {
    this.name = name;
    this.rank = rank;
    this.size = size;
    this.capacity = Math.max(1, capacity);
    registry.add(this);
  }

  /**
   * Starts a record; the caller updates its state as the operation runs. A finished record's
   * object is reused for the next one in its place, so a steady stream of small calls makes no
   * garbage here (records in flight are never reused).
   */
  record(entry: RecordEntry): LiveRecord {
    const { seq, op, dtype, count, root, redop, peer } = entry;
    const old = this.ring[this.next];
    const queuedAt = epochMs();
    let record: LiveRecord;
    if (old !== undefined && (old.state === 'done' || old.state === 'failed')) {
      record = old;
      record.seq = seq;
      record.op = op;
      record.peer = peer;
      record.dtype = dtype;
      record.count = count;
      record.root = root;
      record.redop = redop;
      record.algorithm = undefined;
      record.state = 'queued';
      record.queuedAt = queuedAt;
      record.startedAt = Number.NaN;
      record.endedAt = Number.NaN;
      record.error = undefined;
    } else {
      record = {
        seq,
        op,
        peer,
        dtype,
        count,
        root,
        redop,
        algorithm: undefined,
        state: 'queued',
        queuedAt,
        startedAt: Number.NaN,
        endedAt: Number.NaN,
        error: undefined,
      };
      this.ring[this.next] = record;
    }
    this.next = (this.next + 1) % this.capacity;
    return record;
  }

  /** Where snapshots read the links' recoveries from (the communicator's stats). */
  recoveriesFrom(source: () => readonly ({ readonly rank: number } & RecoveryCounts)[]): void {
    this.recoveries = source;
  }

  /** The records, oldest first, and what the links recovered from if anything. */
  snapshot(): CommRecord {
    const ordered =
      this.ring.length < this.capacity ? this.ring : [...this.ring.slice(this.next), ...this.ring.slice(0, this.next)];
    const records: OpRecord[] = ordered.map((r) => ({
      ...r,
      startedAt: reached(r.startedAt),
      endedAt: reached(r.endedAt),
    }));
    const recoveries = this.recoveries?.() ?? [];
    return recoveries.length === 0
      ? { name: this.name, rank: this.rank, size: this.size, records }
      : { name: this.name, rank: this.rank, size: this.size, records, recoveries };
  }

  /** Stops keeping this communicator in dumps (after destroy). */
  retire(): void {
    registry.delete(this);
  }
}

const registry = new Set<FlightRecorder>();

/**
 * The name of this rank's job: the launcher's (tsccl run and launch set TSCCL_JOB_ID), else what
 * torchrun or Slurm call it, else the store's address, which the ranks of one job share.
 */
export function jobId(env: NodeJS.ProcessEnv = process.env): string {
  const named =
    paramString('TSCCL_JOB_ID', env) ||
    env.TORCHELASTIC_RUN_ID ||
    (env.SLURM_JOB_ID ? `slurm-${env.SLURM_JOB_ID}${env.SLURM_STEP_ID ? `.${env.SLURM_STEP_ID}` : ''}` : undefined) ||
    (env.MASTER_ADDR && env.MASTER_PORT ? `${env.MASTER_ADDR}-${env.MASTER_PORT}` : undefined) ||
    `pid-${process.pid}`;
  return named.replace(/[^A-Za-z0-9._-]/g, '_');
}

/** A new job's name: when it started, and a random part so that two jobs of one second differ. */
export function newJobId(): string {
  return `${new Date().toISOString().replace(/[-:]/g, '').replace(/\..*/, '')}-${randomBytes(3).toString('hex')}`;
}

/** TSCCL_TRACE_DIR as given, or a directory of this job's own under the system's temporary one. */
export function traceDirectory(): string {
  return paramString('TSCCL_TRACE_DIR') || join(tmpdir(), 'tsccl-trace', jobId());
}

/**
 * Writes every communicator's records of this rank to <dir>/rank-<world rank>.json and returns
 * the path (undefined when there is nothing to dump or the write failed).
 */
export function dumpFlightRecords(reason: string): string | undefined {
  for (const forward of dumpForwarders) forward(reason);
  const recorders = [...registry];
  const world = recorders.find((r) => r.name === 'world') ?? recorders[0];
  if (world === undefined) return undefined;
  const dump: RankDump = {
    job: jobId(),
    size: world.size,
    rank: world.rank,
    reason,
    time: new Date().toISOString(),
    comms: recorders.map((r) => r.snapshot()),
  };
  const dir = traceDirectory();
  const path = join(dir, `rank-${world.rank}.json`);
  try {
    mkdirSync(dir, { recursive: true });
    writeFileSync(path, JSON.stringify(dump, null, 1));
    log(
      'WARN',
      () =>
        `rank ${world.rank}: flight records written to ${path} (${reason}); read all ranks' with \`tsccl trace ${dir}\``,
    );
    return path;
  } catch (err) {
    log('WARN', () => `rank ${world.rank}: could not write flight records to ${path}: ${(err as Error).message}`);
    return undefined;
  }
}

/** Threads whose recorders a dump of this thread's must reach (a rank's progress engine). */
const dumpForwarders = new Set<(reason: string) => void>();

/** Passes every dump of this thread on with `forward`, until the returned function is called. */
export function forwardDumps(forward: (reason: string) => void): () => void {
  dumpForwarders.add(forward);
  return () => {
    dumpForwarders.delete(forward);
  };
}

let signalHookInstalled = false;

/** SIGUSR1 dumps the records of a process rank without stopping it (signals reach only the main thread). */
export function installSignalDump(): void {
  if (signalHookInstalled || !isMainThread) return;
  signalHookInstalled = true;
  process.on('SIGUSR1', () => {
    dumpFlightRecords('SIGUSR1');
  });
}
