import { parentPort } from 'node:worker_threads';
import { threadRankBootstrap } from '../job/bootstrap.js';
import { runRankScript } from './rank-script.js';

/** Runs a user script as one thread rank and reports its outcome to the launcher. */
const boot = threadRankBootstrap();
if (boot === undefined || parentPort === null) throw new Error('worker-entry runs only as a rank started by the tsccl launcher');
// The script is told its place in the job: with threads per process, boot.rank and boot.size are its place in its process.
const rank = (boot.global?.rankOffset ?? 0) + boot.rank;
parentPort.postMessage(await runRankScript(boot.script, { rank, size: boot.global?.size ?? boot.size, args: boot.args }));
