import { isRooted } from '../algorithms/schedule.js';
import type { CommRecord, OpRecord, RankDump } from './flight-recorder.js';

/**
 * Reads every rank's flight records and says where a job went wrong: per communicator, the
 * first operation whose description differs between ranks, and the operation some ranks were
 * stuck in while others never arrived.
 */
export interface CommVerdict {
  readonly name: string;
  readonly size: number;
  /** Ranks of this communicator that left records. */
  readonly ranksSeen: number[];
  /** The first seq at which ranks called different operations, with what each called. */
  readonly divergence?: { seq: number; calls: { rank: number; call: string }[] };
  /** The earliest operation that did not finish everywhere, and who never reached it. */
  readonly stuck?: { seq: number; call: string; unfinished: number[]; neverArrived: number[] };
  /** The last seq each rank reached. */
  readonly lastSeq: Record<number, number>;
  /** Sends and receives that did not finish, by rank: who waits on which peer. */
  readonly pendingP2p: { rank: number; call: string; state: string }[];
  /** Frames each rank's link to a peer recovered (TCP resend), where any did. */
  readonly recovered: {
    rank: number;
    peer: number;
    corrupted: number;
    recovered: number;
    resent: number;
    reconnects: number;
    failovers: number;
    failbacks: number;
  }[];
  /** Collectives a rank ran again over new connections after a failure (operation retry). */
  readonly retried: { rank: number; seq: number; call: string; retries: number }[];
}

export function describeCall(r: OpRecord): string {
  if (r.peer !== undefined)
    return `${r.op}(${r.dtype}, count ${r.count}, ${r.op === 'send' ? 'to' : 'from'} ${r.peer}, #${r.seq} with that peer)`;
  const root = isRooted(r.op) ? `, root ${r.root}` : '';
  return `${r.op}(${r.dtype}, count ${r.count}${r.redop !== 'none' ? `, ${r.redop}` : ''}${root})`;
}

export function analyzeTraces(dumps: readonly RankDump[]): CommVerdict[] {
  const byComm = new Map<string, CommRecord[]>();
  for (const dump of dumps)
    for (const comm of dump.comms) {
      let list = byComm.get(comm.name);
      if (list === undefined) byComm.set(comm.name, (list = []));
      list.push(comm);
    }
  return [...byComm.entries()]
    .sort(([a], [b]) => a.localeCompare(b))
    .map(([name, all]) => {
      // Sends and receives count per peer, not in the communicator's sequence: compared apart.
      const comms = all.map((c) => ({ ...c, records: c.records.filter((r) => r.peer === undefined) }));
      const pendingP2p = all
        .flatMap((c) =>
          c.records
            .filter((r) => r.peer !== undefined && r.state !== 'done')
            .map((r) => ({ rank: c.rank, call: describeCall(r), state: r.state })),
        )
        .sort((a, b) => a.rank - b.rank);
      const size = Math.max(...comms.map((c) => c.size));
      const ranksSeen = comms.map((c) => c.rank).sort((a, b) => a - b);
      const lastSeq: Record<number, number> = {};
      for (const c of comms)
        lastSeq[c.rank] = Math.max(0, ...c.records.filter((r) => r.state !== 'queued').map((r) => r.seq));
      const seqs = [...new Set(comms.flatMap((c) => c.records.map((r) => r.seq)))].sort((a, b) => a - b);
      let divergence: CommVerdict['divergence'];
      for (const seq of seqs) {
        const calls = comms.flatMap((c) =>
          c.records.filter((r) => r.seq === seq).map((r) => ({ rank: c.rank, call: describeCall(r) })),
        );
        if (new Set(calls.map((c) => c.call)).size > 1) {
          divergence = { seq, calls: calls.sort((a, b) => a.rank - b.rank) };
          break;
        }
      }
      let stuck: CommVerdict['stuck'];
      for (const seq of seqs) {
        const entries = comms.map((c) => ({ rank: c.rank, record: c.records.find((r) => r.seq === seq) }));
        // Ranks that left no records cannot be asked; a collective every recorded rank finished
        // needed the others too, so it is not where the job got stuck.
        if (entries.every((e) => e.record?.state === 'done')) continue;
        const started = entries.filter((e) => e.record !== undefined && e.record.state !== 'queued');
        if (started.length === 0) continue;
        const all = Array.from({ length: size }, (_, r) => r);
        stuck = {
          seq,
          call: describeCall(started[0].record!),
          unfinished: started.filter((e) => e.record!.state !== 'done').map((e) => e.rank),
          neverArrived: all.filter(
            (r) => !entries.some((e) => e.rank === r && e.record !== undefined && e.record.state !== 'queued'),
          ),
        };
        break;
      }
      const recovered = all
        .flatMap((c) =>
          (c.recoveries ?? []).map((p) => ({
            rank: c.rank,
            peer: p.rank,
            corrupted: p.corrupted,
            recovered: p.recovered,
            resent: p.resent,
            // Records written before reconnection was counted have no such field.
            reconnects: p.reconnects ?? 0,
            failovers: p.failovers ?? 0,
            failbacks: p.failbacks ?? 0,
          })),
        )
        .sort((a, b) => a.rank - b.rank || a.peer - b.peer);
      const retried = comms
        .flatMap((c) =>
          c.records
            .filter((r) => (r.retries ?? 0) > 0)
            .map((r) => ({ rank: c.rank, seq: r.seq, call: describeCall(r), retries: r.retries! })),
        )
        .sort((a, b) => a.seq - b.seq || a.rank - b.rank);
      return { name, size, ranksSeen, divergence, stuck, lastSeq, pendingP2p, recovered, retried };
    });
}

export function formatVerdicts(verdicts: readonly CommVerdict[]): string {
  const lines: string[] = [];
  for (const v of verdicts) {
    lines.push(`communicator ${v.name} (${v.size} ranks; records from ranks ${v.ranksSeen.join(', ')})`);
    lines.push(
      `  last operation reached: ${Object.entries(v.lastSeq)
        .map(([r, s]) => `rank ${r} #${s}`)
        .join(', ')}`,
    );
    if (v.divergence !== undefined) {
      lines.push(
        `  ranks diverged at #${v.divergence.seq}: ${v.divergence.calls.map((c) => `rank ${c.rank} called ${c.call}`).join('; ')}`,
      );
    }
    if (v.stuck !== undefined) {
      lines.push(
        `  stuck at #${v.stuck.seq} ${v.stuck.call}: ${v.stuck.neverArrived.length > 0 ? `ranks ${v.stuck.neverArrived.join(', ')} never arrived` : 'every rank arrived'}` +
          `${v.stuck.unfinished.length > 0 ? `; ranks ${v.stuck.unfinished.join(', ')} did not finish` : ''}`,
      );
    }
    for (const p of v.pendingP2p) lines.push(`  rank ${p.rank}: ${p.call} ${p.state}`);
    for (const r of v.recovered)
      lines.push(
        `  rank ${r.rank}, link to rank ${r.peer}: ${r.corrupted} frames came corrupted, ${r.recovered} came again intact; sent ${r.resent} again${r.reconnects > 0 ? `; ${r.reconnects} socket(s) broke and were re-established${r.failovers > 0 ? `, ${r.failovers} over another path${r.failbacks > 0 ? ` (${r.failbacks} moved back to its own once it answered again)` : ''}` : ''}` : ''}`,
      );
    for (const r of v.retried)
      lines.push(
        `  rank ${r.rank}: #${r.seq} ${r.call} failed and was run again ${r.retries} time(s) over new connections`,
      );
    if (v.divergence === undefined && v.stuck === undefined && v.pendingP2p.length === 0)
      lines.push('  every recorded operation finished on every rank');
  }
  return lines.join('\n');
}
