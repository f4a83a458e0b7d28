import type { TimelineDocument } from './timeline.js';

/** One event of the Trace Event Format that Perfetto and chrome://tracing read. */
export interface TraceEvent {
  readonly name: string;
  readonly ph: 'X' | 'C' | 'M';
  readonly pid: number;
  readonly tid?: number;
  readonly ts?: number;
  readonly dur?: number;
  readonly args?: Record<string, unknown>;
}

const RANKS_PID = 1;
const LINKS_PID = 2;

/**
 * A timeline as a Chrome trace (JSON object format, times in microseconds): a track per rank
 * with its steps, and a counter per link with its utilisation. Pure, so the page exports the
 * same file the CLI writes.
 */
export function chromeTrace(timeline: TimelineDocument): { traceEvents: TraceEvent[]; displayTimeUnit: 'ns' } {
  const events: TraceEvent[] = [
    { name: 'process_name', ph: 'M', pid: RANKS_PID, args: { name: `ranks (predicted ${timeline.algorithm})` } },
    { name: 'process_name', ph: 'M', pid: LINKS_PID, args: { name: 'link utilisation (predicted)' } },
  ];
  const ranks = new Set(timeline.steps.map((s) => s.rank));
  for (const rank of ranks)
    events.push({ name: 'thread_name', ph: 'M', pid: RANKS_PID, tid: rank, args: { name: `rank ${rank}` } });
  for (const step of timeline.steps) {
    const closing = step.ops[step.ops.length - 1];
    events.push({
      name: `step ${step.index}: ${closing.kind}${closing.peer >= 0 ? ` ${closing.kind === 'send' ? 'to' : 'from'} ${closing.peer}` : ''}`,
      ph: 'X',
      pid: RANKS_PID,
      tid: step.rank,
      ts: step.startUs,
      dur: Math.max(0, step.endUs - step.startUs),
      args: {
        channel: step.channel,
        ops: step.ops.map((op) => `${op.kind} peer ${op.peer} elements ${op.offset}+${op.count} (${op.bytes} B)`),
      },
    });
  }
  for (const link of timeline.links)
    for (const [ts, utilisation] of link.points)
      events.push({ name: link.link, ph: 'C', pid: LINKS_PID, ts, args: { utilisation } });
  return { traceEvents: events, displayTimeUnit: 'ns' };
}
