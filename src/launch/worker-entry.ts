import { parentPort } from 'node:worker_threads';
import { threadRankBootstrap } from './bootstrap.js';
import { runRankScript } from './rank-script.js';

/** Runs a user script as one thread rank and reports its outcome to the launcher. */
const boot = threadRankBootstrap();
if (boot === undefined || parentPort === null) throw new Error('worker-entry runs only as a rank started by the tsccl launcher');
parentPort.postMessage(await runRankScript(boot.script, { rank: boot.rank, size: boot.size, args: boot.args }));
