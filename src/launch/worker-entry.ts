import { parentPort } from 'node:worker_threads';
import { dumpFlightRecords } from '../debug/flight-recorder.js';
import { threadRankBootstrap } from '../job/bootstrap.js';
import { DUMP_FLIGHT_RECORDS, runRankScript } from './rank-script.js';

/** Runs a user script as one thread rank and reports its outcome to the launcher. */
const boot = threadRankBootstrap();
if (boot === undefined || parentPort === null)
  throw new Error('worker-entry runs only as a rank started by the tsccl launcher');
// The script is told its place in the job: with threads per process, boot.rank and boot.size are its place in its process.
const rank = (boot.global?.rankOffset ?? 0) + boot.rank;
const onMessage = (message: unknown) => {
  if (message === DUMP_FLIGHT_RECORDS) dumpFlightRecords('SIGUSR1');
};
parentPort.on('message', onMessage);
const outcome = await runRankScript(boot.script, { rank, size: boot.global?.size ?? boot.size, args: boot.args });
// A listening port would keep the thread alive after its script.
parentPort.off('message', onMessage);
parentPort.postMessage(outcome);
