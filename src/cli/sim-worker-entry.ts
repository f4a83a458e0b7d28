import { parentPort, workerData } from 'node:worker_threads';
import { main } from './main.js';
import type { SimWorkerData } from './sim-worker.js';

/** The worker thread `tsccl sim` runs in (see sim-worker.ts): the same command line, its exit code back. */
parentPort!.postMessage(await main((workerData as SimWorkerData).tscclSimArgv));
