import { readFile, rm, writeFile } from 'node:fs/promises';
import { type PerformanceEntry, PerformanceObserver, constants } from 'node:perf_hooks';
import type { CommRecord } from '../debug/flight-recorder.js';

/** A communicator whose calls a trace can show: any tsccl communicator (its flight recorder). */
export interface TracedComm {
  flightRecords(): CommRecord;
  /**
   * Whether its calls run on the rank's thread or on a progress engine (`tsccl sim train --trace`
   * replays either); 'auto', each call where the tuner sent it, the inline ones recorded apart.
   */
  readonly progress?: 'inline' | 'engine' | 'auto';
  /** Under 'auto', the records of the calls run on the rank's thread. */
  inlineFlightRecords?(): CommRecord | undefined;
}

/** One span of a Chrome trace ("complete" event); times in microseconds since the epoch. */
export interface TraceEvent {
  readonly name: string;
  readonly cat: string;
  readonly ph: 'X' | 'M';
  readonly ts: number;
  readonly dur?: number;
  readonly pid: number;
  readonly tid: number;
  readonly args?: Record<string, unknown>;
}

export { epochMs } from '../debug/epoch-clock.js';

/**
 * What a rank did in its training steps, as a Chrome / Perfetto trace: one process per rank, a
 * track for its compute (each layer's forward and backward), one for the time it waited (for
 * gradients' all-reduces, for a pipeline neighbour), and one per communicator given, with each
 * collective from issue to end as its flight recorder saw it.
 */
export class StepTrace {
  readonly rank: number;
  private readonly comms: ReadonlyMap<string, TracedComm>;
  private readonly events: TraceEvent[] = [];
  private readonly tracks = new Map<string, number>();
  /** Per communicator and stream (its collectives; each peer's sends; each peer's receives), the last sequence number already in the trace. */
  private readonly seen = new Map<string, number>();

  /**
   * The thread's garbage collections, on a track of their own: V8 finishes a collection in a task
   * that runs when the thread next yields, often the wait for gradients, which it then lengthens.
   */
  private readonly collections = new PerformanceObserver((list) => this.addCollections(list.getEntries()));

  constructor(rank: number, comms: Record<string, TracedComm> = {}) {
    this.rank = rank;
    this.comms = new Map(Object.entries(comms));
    this.collections.observe({ entryTypes: ['gc'] });
  }

  private addCollections(entries: readonly PerformanceEntry[]): void {
    for (const e of entries) {
      const from = performance.timeOrigin + e.startTime;
      const kind = (e as { detail?: { kind?: number } }).detail?.kind;
      this.span('gc', kind === constants.NODE_PERFORMANCE_GC_MINOR ? 'minor' : 'major', from, from + e.duration);
    }
  }

  /** A span on track `track` from `startMs` to `endMs` (epochMs()). */
  span(track: string, name: string, startMs: number, endMs: number, args?: Record<string, unknown>): void {
    this.events.push({
      name,
      cat: track,
      ph: 'X',
      ts: startMs * 1000,
      dur: Math.max(0, endMs - startMs) * 1000,
      pid: this.rank,
      tid: this.track(track),
      args,
    });
  }

  /** Adds the collectives each communicator ended since the last call (the trainers call it after each step). */
  collectCalls(): void {
    for (const [name, comm] of this.comms) {
      const inline = comm.inlineFlightRecords?.();
      this.collectRecords(
        name,
        comm.flightRecords(),
        comm.progress === 'inline' || comm.progress === undefined ? 'inline' : 'engine',
      );
      if (inline !== undefined) this.collectRecords(`${name}/inline`, inline, 'inline');
    }
  }

  /** The calls of one flight record not yet in the trace, on the track of communicator `name`. */
  private collectRecords(name: string, record: CommRecord, progress: 'inline' | 'engine'): void {
    const { records, name: commName, size, rank: groupRank } = record;
    for (const r of records) {
      // Sends and receives are numbered per peer and direction, collectives per communicator.
      const stream = r.peer === undefined ? name : `${name} ${r.op} ${r.peer}`;
      if (r.seq <= (this.seen.get(stream) ?? -1) || r.endedAt === undefined) continue;
      this.span(
        `comm ${name}`,
        r.peer === undefined ? r.op : `${r.op} ${r.op === 'send' ? 'to' : 'from'} ${r.peer}`,
        r.queuedAt,
        r.endedAt,
        {
          seq: r.seq,
          ...(r.peer === undefined ? {} : { peer: r.peer }),
          comm: commName,
          size,
          groupRank,
          progress,
          count: r.count,
          dtype: r.dtype,
          algorithm: r.algorithm,
          startedAt: r.startedAt,
          state: r.state,
        },
      );
      this.seen.set(stream, Math.max(this.seen.get(stream) ?? -1, r.seq));
    }
  }

  /** The trace's events, with the names of the rank's process and tracks; collections are no longer watched after. */
  chromeEvents(): TraceEvent[] {
    this.addCollections(this.collections.takeRecords());
    this.collections.disconnect();
    const names: TraceEvent[] = [
      {
        name: 'process_name',
        cat: '__metadata',
        ph: 'M',
        ts: 0,
        pid: this.rank,
        tid: 0,
        args: { name: `rank ${this.rank}` },
      },
      ...[...this.tracks].map(
        ([track, tid]): TraceEvent => ({
          name: 'thread_name',
          cat: '__metadata',
          ph: 'M',
          ts: 0,
          pid: this.rank,
          tid,
          args: { name: track },
        }),
      ),
    ];
    return [...names, ...this.events];
  }

  private track(name: string): number {
    let tid = this.tracks.get(name);
    if (tid === undefined) {
      tid = this.tracks.size + 1;
      this.tracks.set(name, tid);
    }
    return tid;
  }
}

/** What `writeTrace` needs of the world: its rank, and a barrier. */
export interface TraceWorld {
  readonly rank: number;
  readonly size: number;
  barrier(options?: { timeoutMs?: number; signal?: AbortSignal }): Promise<void>;
}

/**
 * Writes every rank's trace into one Chrome trace JSON at `path` (open it in ui.perfetto.dev or
 * chrome://tracing): each rank writes `path.rank<r>`, then rank 0 merges the parts and removes
 * them. Collective over `world`; the parts must be on a file system rank 0 sees (one host, or a
 * shared directory).
 */
export async function writeTrace(world: TraceWorld, trace: StepTrace, path: string): Promise<void> {
  await writeFile(`${path}.rank${world.rank}`, JSON.stringify(trace.chromeEvents()));
  await world.barrier();
  if (world.rank !== 0) return;
  const events: TraceEvent[] = [];
  for (let r = 0; r < world.size; r++) {
    const part = `${path}.rank${r}`;
    events.push(...(JSON.parse(await readFile(part, 'utf8')) as TraceEvent[]));
    await rm(part);
  }
  await writeFile(path, JSON.stringify({ traceEvents: events, displayTimeUnit: 'ms' }));
}
