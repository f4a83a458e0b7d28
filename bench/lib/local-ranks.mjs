// What a prediction request says about ranks on this machine, as the communicator would tell the
// tuner: the transport, whether thread ranks outnumber the cores, and how large a message the
// transport's one-shot path carries (bench/predict-local.mjs, bench/model-regret.mjs).
import { ONE_SHOT_CAPACITY } from '../../dist/src/tuner/predict.js';
import { isOversubscribed } from '../../dist/src/transport/wait.js';

/** @param {boolean} procs process ranks over TCP, else thread ranks @param {number} ranks */
export function localRanks(procs, ranks) {
  const transport = procs ? 'tcp' : 'shm';
  return {
    transport,
    oversubscribed: !procs && isOversubscribed(ranks),
    oneShotCapacity: ONE_SHOT_CAPACITY[transport],
  };
}
