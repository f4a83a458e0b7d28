import { Worker, isMainThread, parentPort, workerData } from 'node:worker_threads';
import { coreYield } from '../transport/sched-yield.js';

/**
 * The child program of measureCoreSwitchUs (core-switch.ts), run pinned to one core: two worker
 * threads hand a flag back and forth HAND_OFFS times, each spinning on it with sched_yield as
 * crowded thread ranks do, and it prints the microseconds per hand-off after WARM_UP of them as
 * JSON ({ "us": .. }, or { "missing": .. } without sched_yield).
 */
const HAND_OFFS = 20_000;
const WARM_UP = 2_000;

interface Probe {
  readonly flag: SharedArrayBuffer;
  readonly me: number;
}

if (isMainThread) {
  const flag = new SharedArrayBuffer(4);
  const workers = [0, 1].map(
    (me) => new Worker(new URL(import.meta.url), { workerData: { flag, me } satisfies Probe }),
  );
  const results = await Promise.all(
    workers.map(
      (w) =>
        new Promise<{ us?: number; missing?: string }>((done, fail) => {
          w.once('message', done);
          w.once('error', fail);
        }),
    ),
  );
  await Promise.all(workers.map((w) => w.terminate()));
  process.stdout.write(`${JSON.stringify(results[0])}\n`);
} else {
  const { flag, me } = workerData as Probe;
  const yieldCore = coreYield();
  if (yieldCore === undefined) {
    parentPort!.postMessage({ missing: 'sched_yield (node:wasi)' });
  } else {
    const turn = new Int32Array(flag);
    let started = 0;
    for (let i = 0; i < HAND_OFFS; i++) {
      if (i === WARM_UP) started = performance.now();
      // Hand-off i goes from the thread whose turn it is (i % 2) to the other.
      if (i % 2 === me) Atomics.store(turn, 0, i + 1);
      else while (Atomics.load(turn, 0) < i + 1) yieldCore();
    }
    parentPort!.postMessage({ us: ((performance.now() - started) * 1000) / (HAND_OFFS - WARM_UP) });
  }
}
