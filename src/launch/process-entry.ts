import { jobFromEnv } from './env-job.js';
import { runRankScript } from './rank-script.js';

/** Runs a user script as one process rank started by `tsccl launch`, reporting through IPC. */
const [script, ...args] = process.argv.slice(2);
const job = jobFromEnv();
if (script === undefined || job === undefined || process.send === undefined) {
  throw new Error('process-entry runs only as a rank started by tsccl launch');
}
const outcome = await runRankScript(script, { rank: job.rank, size: job.size, args });
process.send(outcome, () => { process.exitCode = outcome.type === 'result' ? 0 : 1; process.disconnect(); });
