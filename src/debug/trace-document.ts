import { readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { invalidArgument } from '../errors.js';
import type { OpRecord, RankDump } from './flight-recorder.js';
import { type CommVerdict, analyzeTraces } from './trace-analysis.js';

/** What `tsccl trace --format json` prints and the page's job view draws. */
export interface TraceDocument {
  readonly tool: 'tsccl trace';
  readonly dir: string;
  readonly job: string | null;
  readonly ranks: readonly { rank: number; reason: string; time: string }[];
  readonly communicators: readonly CommVerdict[];
  /** Each rank's newest records per communicator (collectives, sends and receives), in the order they were issued. */
  readonly records: readonly { rank: number; comm: string; records: readonly OpRecord[] }[];
}

/** Records kept per rank and communicator in the document: the end of a job is where it went wrong. */
const RECORDS_SHOWN = 32;

/** Reads every rank's flight records in `dir` (TSCCL_TRACE_DIR) and says where the ranks diverged or stopped. */
export function traceDocument(dir: string): TraceDocument {
  let files: string[];
  try {
    files = readdirSync(dir).filter((f) => /^rank-\d+\.json$/.test(f));
  } catch (err) {
    throw invalidArgument(`Cannot read trace directory ${dir}: ${(err as Error).message}`, { argument: 'dir' });
  }
  if (files.length === 0) throw invalidArgument(`No rank-*.json flight records in ${dir}`, { argument: 'dir' });
  const dumps = files.map((f) => {
    try {
      return JSON.parse(readFileSync(join(dir, f), 'utf8')) as RankDump;
    } catch (err) {
      throw invalidArgument(`${join(dir, f)} is not a flight record: ${(err as Error).message}`, { argument: 'dir' });
    }
  });
  checkOneJob(dir, files, dumps);
  dumps.sort((a, b) => a.rank - b.rank);
  return {
    tool: 'tsccl trace',
    dir,
    job: dumps[0].job ?? null,
    ranks: dumps.map((d) => ({ rank: d.rank, reason: d.reason, time: d.time })),
    communicators: analyzeTraces(dumps),
    records: dumps.flatMap((d) =>
      d.comms.map((c) => ({
        rank: d.rank,
        comm: c.name,
        records: [...c.records].sort((a, b) => a.queuedAt - b.queuedAt || a.seq - b.seq).slice(-RECORDS_SHOWN),
      })),
    ),
  };
}

/** Records of different jobs, or of worlds of different sizes, would read as a false divergence. */
function checkOneJob(dir: string, files: readonly string[], dumps: readonly RankDump[]): void {
  const jobOf = (d: RankDump) => `${d.job ?? 'an unnamed job'} of ${d.size ?? '?'} ranks`;
  const groups = new Map<string, string[]>();
  dumps.forEach((d, i) => {
    groups.set(jobOf(d), [...(groups.get(jobOf(d)) ?? []), files[i]]);
  });
  if (groups.size <= 1) return;
  const listed = [...groups].map(([job, names]) => `${job}: ${names.join(', ')}`).join('; ');
  throw invalidArgument(
    `${dir} holds the records of ${groups.size} jobs, which tsccl trace does not mix (${listed}); give it one job's directory`,
    { argument: 'dir' },
  );
}
