#!/usr/bin/env node
// How often this machine stops a busy thread: N worker threads spin reading the clock for 3 s
// and count the gaps over 0.5 ms between two reads (the thread did not run meanwhile), with the
// CPU time of the whole machine over the run from /proc/stat (user, system, idle, steal ticks).
// With as many threads as cores and nothing else running, every gap is the machine's, not a
// scheduler sharing a core between threads.
// Usage: node bench/bounds/thread-stops.mjs [threads=2] [seconds=3]
import { readFileSync } from 'node:fs';
import { Worker, isMainThread, parentPort, workerData } from 'node:worker_threads';

const GAP_MS = 0.5;

if (isMainThread) {
  const arg = (i, fallback) => (process.argv[i] === undefined ? fallback : Number(process.argv[i]));
  const threads = arg(2, 2);
  const seconds = arg(3, 3);
  const ticks = () => readFileSync('/proc/stat', 'utf8').split('\n')[0].split(/\s+/).slice(1, 9).map(Number);
  const before = ticks();
  const reports = await Promise.all(
    Array.from(
      { length: threads },
      (_, i) =>
        new Promise((resolve, reject) => {
          const worker = new Worker(new URL(import.meta.url), { workerData: { i, seconds } });
          worker.once('message', resolve);
          worker.once('error', reject);
        }),
    ),
  );
  const spent = ticks().map((t, i) => t - before[i]);
  console.log(`machine ticks over the run: user ${spent[0]}, system ${spent[2]}, idle ${spent[3]}, steal ${spent[7]}`);
  for (const r of reports) console.log(r);
} else {
  const { i, seconds } = workerData;
  const start = performance.now();
  let last = start;
  const gaps = [];
  while (last - start < seconds * 1000) {
    const now = performance.now();
    if (now - last > GAP_MS) gaps.push(now - last);
    last = now;
  }
  gaps.sort((a, b) => b - a);
  const total = gaps.reduce((a, b) => a + b, 0);
  parentPort.postMessage(
    `thread ${i}: ${gaps.length} stops over ${GAP_MS} ms, ${total.toFixed(0)} ms in all, the longest ${gaps
      .slice(0, 5)
      .map((g) => g.toFixed(1))
      .join(' ')} ms`,
  );
}
