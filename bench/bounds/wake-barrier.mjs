#!/usr/bin/env node
// The floor under thread ranks' hand-offs: N worker threads meet in a barrier over a
// SharedArrayBuffer, each round every thread raises its flag and waits for all others,
// spinning `spinUs` and then sleeping in Atomics.wait (what tsccl's low-latency path does).
// With more threads than cores every round costs sleeps and wake-ups; JavaScript has no
// sched_yield, which is how Open MPI keeps oversubscribed ranks fast.
// Usage: node bench/bounds/wake-barrier.mjs [threads=4] [spinUs=0] [rounds=5000]
import { Worker, isMainThread, parentPort, workerData } from 'node:worker_threads';

if (isMainThread) {
  const [threads, spinUs, rounds] = [Number(process.argv[2] ?? 4), Number(process.argv[3] ?? 0), Number(process.argv[4] ?? 5000)];
  const flags = new SharedArrayBuffer(threads * 64);
  const workers = Array.from({ length: threads }, (_, id) => new Worker(new URL(import.meta.url), { workerData: { flags, id, threads, spinUs, rounds } }));
  const perRound = await Promise.all(workers.map((w) => new Promise((resolve) => w.once('message', resolve))));
  console.log(`${threads} threads, spin ${spinUs} us: ${perRound.map((us) => us.toFixed(1)).join(' ')} us per barrier round`);
} else {
  const { flags, id, threads, spinUs, rounds } = workerData;
  const words = new Int32Array(flags);
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
      }
    }
  }
  parentPort.postMessage(((performance.now() - start) * 1000) / rounds);
}
