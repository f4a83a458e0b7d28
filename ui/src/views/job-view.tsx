import type { TraceDocument } from '../../../src/debug/trace-document.js';
import { DEFAULT_STATE, apiUrl } from '../../../src/ui/view-state.js';
import { Failure, Loading } from '../controls.js';
import { formatUs } from '../format.js';
import { useApi } from '../use-api.js';

const HISTORY_SHOWN = 6;

/** A record as the last call of a rank: a collective by its number, a send or receive by its peer. */
function describe(r: TraceDocument['records'][number]['records'][number]): string {
  if (r.peer === undefined) return `#${r.seq} ${r.op}(${r.dtype}, ${r.count})`;
  return `${r.op}(${r.dtype}, ${r.count}) ${r.op === 'send' ? 'to' : 'from'} ${r.peer}`;
}
const STATE_MARKS: Record<string, string> = { done: '✓', failed: '✗', running: '…', queued: '(queued)' };

/** A job's flight records: who called what, where ranks diverged, who is stuck where and who never arrived. */
export function JobView() {
  const job = useApi<TraceDocument | null>(apiUrl('job', DEFAULT_STATE));
  if (job.state === 'failed') return <Failure error={job.error} />;
  if (job.state === 'loading') return <Loading />;
  const doc = job.data;
  if (doc === null)
    return (
      <section class="view">
        <p class="summary">
          No flight records loaded. Ranks write them to <code>TSCCL_TRACE_DIR</code> when a call fails or times out (or
          on SIGUSR2); start the page with <code>tsccl ui --trace-dir DIR</code> to read them.
        </p>
      </section>
    );
  return (
    <section class="view">
      <p class="summary" data-testid="job-summary">
        {doc.job ?? 'unnamed job'}: records of {doc.ranks.length} ranks from {doc.dir}
      </p>
      {doc.communicators.map((c) => (
        <article key={c.name} class="verdict">
          <h2>
            communicator {c.name} ({c.size} ranks, records from {c.ranksSeen.length})
          </h2>
          {c.divergence === undefined && c.stuck === undefined && c.pendingP2p.length === 0 && (
            <p>Every rank made the same calls, and all finished.</p>
          )}
          {c.divergence !== undefined && (
            <p class="bad" data-testid="divergence">
              First divergence at call {c.divergence.seq}:{' '}
              {c.divergence.calls.map((x) => `rank ${x.rank} called ${x.call}`).join('; ')}
            </p>
          )}
          {c.pendingP2p.length > 0 && (
            <ul class="bad" data-testid="pending-p2p">
              {c.pendingP2p.map((p) => (
                <li key={`${p.rank}:${p.call}`}>
                  rank {p.rank}: {p.call} {p.state}
                </li>
              ))}
            </ul>
          )}
          {c.recovered.length > 0 && (
            <ul data-testid="recovered">
              {c.recovered.map((r) => (
                <li key={`${r.rank}:${r.peer}`}>
                  rank {r.rank}, link to rank {r.peer}: {r.corrupted} frames came corrupted, {r.recovered} came again
                  intact; sent {r.resent} again
                  {r.reconnects > 0 &&
                    `; ${r.reconnects} socket(s) broke and were re-established${r.failovers > 0 ? `, ${r.failovers} over another path${r.failbacks > 0 ? ` (${r.failbacks} moved back to its own once it answered again)` : ''}` : ''}`}
                </li>
              ))}
            </ul>
          )}
          {c.retried.length > 0 && (
            <ul data-testid="retried">
              {c.retried.map((r) => (
                <li key={`${r.rank}:${r.seq}`}>
                  rank {r.rank}: #{r.seq} {r.call} failed and was run again {r.retries} time(s) over new connections
                </li>
              ))}
            </ul>
          )}
          {c.stuck !== undefined && (
            <p class="bad" data-testid="stuck">
              Stuck in call {c.stuck.seq}, {c.stuck.call}: unfinished on ranks {c.stuck.unfinished.join(', ') || 'none'}
              ; never reached by ranks {c.stuck.neverArrived.join(', ') || 'none'}
            </p>
          )}
          <table>
            <thead>
              <tr>
                <th scope="col">rank</th>
                <th scope="col">calls, oldest first</th>
                <th scope="col">last call reached</th>
                <th scope="col">its state</th>
                <th scope="col">took</th>
                <th scope="col">error</th>
              </tr>
            </thead>
            <tbody>
              {Array.from({ length: c.size }, (_, rank) => {
                const records = doc.records.find((r) => r.comm === c.name && r.rank === rank)?.records;
                if (records === undefined)
                  return (
                    <tr key={rank} class="bad">
                      <th scope="row">{rank}</th>
                      <td colSpan={5}>no records: this rank never dumped (it did not fail or time out in a call)</td>
                    </tr>
                  );
                const last = records[records.length - 1];
                return (
                  <tr key={rank} class={last?.state === 'done' ? '' : 'bad'}>
                    <th scope="row">{rank}</th>
                    <td>
                      {records
                        .slice(-HISTORY_SHOWN)
                        .map(
                          (r) =>
                            `${r.peer === undefined ? `#${r.seq} ${r.op}` : `${r.op} ${r.op === 'send' ? 'to' : 'from'} ${r.peer}`} ${STATE_MARKS[r.state]}`,
                        )
                        .join(' · ')}
                    </td>
                    <td>{last === undefined ? 'none' : describe(last)}</td>
                    <td>{last?.state ?? ''}</td>
                    <td>
                      {last?.startedAt !== undefined && last.endedAt !== undefined
                        ? formatUs((last.endedAt - last.startedAt) * 1e3)
                        : ''}
                    </td>
                    <td>{last?.error ?? ''}</td>
                  </tr>
                );
              })}
            </tbody>
          </table>
        </article>
      ))}
    </section>
  );
}
