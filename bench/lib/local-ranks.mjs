// What a prediction request says about ranks on this machine, as the communicator would tell the
// tuner: the transport, whether thread ranks outnumber the cores, and how large a message the
// transport's one-shot path carries (bench/predict-local.mjs, bench/model-regret.mjs).
import { LL_SLOT_BYTES } from '../../dist/src/transport/shm/mailbox.js';
import { TCP_ONE_SHOT_BYTES } from '../../dist/src/transport/tcp/tcp-low-latency.js';
import { isOversubscribed } from '../../dist/src/transport/wait.js';

/** @param {boolean} procs process ranks over TCP, else thread ranks @param {number} ranks */
export function localRanks(procs, ranks) {
  return { transport: procs ? 'tcp' : 'shm', oversubscribed: !procs && isOversubscribed(ranks), oneShotCapacity: procs ? TCP_ONE_SHOT_BYTES : LL_SLOT_BYTES };
}
