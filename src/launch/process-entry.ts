import { TscclError, serializeError } from '../errors.js';
import { jobFromEnv } from '../job/env-job.js';
import { type RankOutcomeMessage, runRankScript } from './rank-script.js';
import { type RankOutcome, run } from './run.js';

/**
 * Runs a user script in one process of a job started by `tsccl launch`, reporting through IPC:
 * as one rank, or, with TSCCL_THREADS_PER_PROC, as that many thread ranks of the job.
 */
const [script, ...args] = process.argv.slice(2);
const job = jobFromEnv();
if (script === undefined || job === undefined || process.send === undefined) {
  throw new Error('process-entry runs only as a rank started by tsccl launch');
}
// The script sees the command line it would have run with directly: node script args...
process.argv = [process.argv[0], script.startsWith('file:') ? new URL(script).pathname : script, ...args];
const threads = Number(process.env.TSCCL_THREADS_PER_PROC ?? 1);
let message:
  | RankOutcomeMessage
  | { type: 'results'; ranks: { rank: number; ok: boolean; result?: unknown; error?: unknown }[] };
if (threads <= 1) {
  message = await runRankScript(script, { rank: job.rank, size: job.size, args });
} else {
  let ranks: RankOutcome[];
  try {
    ranks = (
      await run({
        ranks: threads,
        script,
        args,
        global: { rankOffset: job.rank * threads, size: job.size * threads, threadsPerProcess: threads, job },
      })
    ).ranks;
  } catch (err) {
    ranks = (err instanceof TscclError ? (err.details.ranks as RankOutcome[] | undefined) : undefined) ?? [];
    if (ranks.length === 0) ranks = [{ rank: job.rank * threads, ok: false, error: err as Error }];
  }
  message = {
    type: 'results',
    ranks: ranks.map((o) => ({
      rank: o.rank,
      ok: o.ok,
      result: o.result,
      error: o.error === undefined ? undefined : serializeError(o.error),
    })),
  };
}
const ok = message.type === 'result' || (message.type === 'results' && message.ranks.every((r) => r.ok));
process.send(message, () => {
  process.exitCode = ok ? 0 : 1;
  process.disconnect();
});
