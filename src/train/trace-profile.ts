/** What a measured training run's trace (writeTrace's Chrome trace) says of each rank's time. */
export interface RankProfile {
  readonly rank: number;
  /** From the rank's first span to its last. */
  readonly wallMs: number;
  readonly computeMs: number;
  /** Waiting for communication: gradients' all-reduces left after backward, a pipeline neighbour's data. */
  readonly waitMs: number;
  /** Neither computing nor waiting on a traced span: the pipeline's bubble, and the trainer's own work. */
  readonly otherMs: number;
  /** Per communicator, its collectives from issue to end (they overlap compute). */
  readonly comms: readonly { readonly name: string; readonly calls: number; readonly ms: number }[];
}

interface Span {
  readonly ph: string;
  readonly cat?: string;
  readonly pid: number;
  readonly ts?: number;
  readonly dur?: number;
}

/**
 * Sums a trace's spans per rank and track (StepTrace's tracks: compute, wait, comm <name>).
 * Pure, so the page reads a trace file dropped on it the same way the server reads one.
 */
export function traceProfile(trace: { readonly traceEvents: readonly Span[] }): RankProfile[] {
  const ranks = new Map<
    number,
    { from: number; to: number; compute: number; wait: number; comms: Map<string, { calls: number; ms: number }> }
  >();
  for (const e of trace.traceEvents) {
    if (e.ph !== 'X' || e.ts === undefined) continue;
    let r = ranks.get(e.pid);
    if (r === undefined)
      ranks.set(e.pid, (r = { from: Infinity, to: -Infinity, compute: 0, wait: 0, comms: new Map() }));
    const ms = (e.dur ?? 0) / 1000;
    r.from = Math.min(r.from, e.ts / 1000);
    r.to = Math.max(r.to, (e.ts + (e.dur ?? 0)) / 1000);
    if (e.cat === 'compute') r.compute += ms;
    else if (e.cat === 'wait') r.wait += ms;
    else if (e.cat?.startsWith('comm ')) {
      const name = e.cat.slice(5);
      const c = r.comms.get(name) ?? r.comms.set(name, { calls: 0, ms: 0 }).get(name)!;
      c.calls++;
      c.ms += ms;
    }
  }
  return [...ranks]
    .sort((a, b) => a[0] - b[0])
    .map(([rank, r]) => {
      const wallMs = r.to - r.from;
      return {
        rank,
        wallMs,
        computeMs: r.compute,
        waitMs: r.wait,
        otherMs: Math.max(0, wallMs - r.compute - r.wait),
        comms: [...r.comms].map(([name, c]) => ({ name, ...c })),
      };
    });
}
