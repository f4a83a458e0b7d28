#!/usr/bin/env node
// The floor under thread ranks' hand-offs: N worker threads meet in a barrier over a
// SharedArrayBuffer, each round every thread raises its flag and waits for all others,
// spinning `spinUs` and then sleeping in Atomics.wait. With more threads than cores every round
// costs sleeps and wake-ups, unless the spin yields the core on every turn (`yield`: sched_yield
// through node:wasi, as tsccl's thread ranks do when they outnumber the cores, and as Open MPI's
// oversubscribed ranks do); then it may spin long, as it holds no core another thread wants.
// Usage: node bench/bounds/wake-barrier.mjs [threads=4] [spinUs=0] [rounds=5000] [yield]
import { Worker, isMainThread, parentPort, workerData } from 'node:worker_threads';
import { coreYield } from '../../dist/src/transport/sched-yield.js';

if (isMainThread) {
  const [threads, spinUs, rounds] = [
    Number(process.argv[2] ?? 4),
    Number(process.argv[3] ?? 0),
    Number(process.argv[4] ?? 5000),
  ];
  const yields = process.argv[5] === 'yield';
  const flags = new SharedArrayBuffer(threads * 64);
  const workers = Array.from(
    { length: threads },
    (_, id) => new Worker(new URL(import.meta.url), { workerData: { flags, id, threads, spinUs, rounds, yields } }),
  );
  const perRound = await Promise.all(workers.map((w) => new Promise((resolve) => w.once('message', resolve))));
  console.log(
    `${threads} threads, spin ${spinUs} us${yields ? ' yielding' : ''}: ${perRound.map((us) => us.toFixed(1)).join(' ')} us per barrier round`,
  );
} else {
  const { flags, id, threads, spinUs, rounds, yields } = workerData;
  const words = new Int32Array(flags);
  const yieldCore = yields ? coreYield() : undefined;
  if (yields && yieldCore === undefined) throw new Error('this runtime has no node:wasi to yield with');
  const start = performance.now();
  for (let round = 1; round <= rounds; round++) {
    Atomics.store(words, id * 16, round);
    Atomics.notify(words, id * 16);
    for (let peer = 0; peer < threads; peer++) {
      const index = peer * 16;
      const spinUntil = performance.now() + spinUs / 1000;
      for (;;) {
        const seen = Atomics.load(words, index);
        if (seen >= round) break;
        if (performance.now() > spinUntil) Atomics.wait(words, index, seen, 1);
        else yieldCore?.();
      }
    }
  }
  parentPort.postMessage(((performance.now() - start) * 1000) / rounds);
}
