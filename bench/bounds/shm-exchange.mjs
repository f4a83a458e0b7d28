#!/usr/bin/env node
// The floor under a small all-reduce between 2 thread ranks: two worker threads exchange 8 B
// through a SharedArrayBuffer, each publishing its data and a sequence flag, spinning on the
// other's flag and adding the pair, with an `await` per call as tsccl's API has. Options add what
// tsccl's one-shot path does besides: `status` (store this rank's status word and read the
// peer's), `notify` (an Atomics.notify after each flag and status store), `header` (four header
// words beside the flag), `copy` (the data copied with TypedArray.set), `line` (the data in the
// flag's cache line, as tsccl's low-latency slots carry up to 32 B, instead of the next line),
// `sync` (no `await`: the floor of a blocking call), `own` (each rank adds rank 0's data to
// rank 1's as they lie in the two ranks' published words, in rank order, so a rank also reads
// its own published line, which its peer is pulling at that moment; by default it adds its own
// input to the peer's data). No tsccl code runs.
// Usage: node bench/bounds/shm-exchange.mjs [status] [notify] [header] [copy] [line] [sync] [own] [--calls N]
import { Worker, isMainThread, workerData } from 'node:worker_threads';

if (isMainThread) {
  const argv = process.argv.slice(2);
  const i = argv.indexOf('--calls');
  const calls = i < 0 ? 500_000 : Number(argv[i + 1]);
  const options = Object.fromEntries(
    ['status', 'notify', 'header', 'copy', 'line', 'sync', 'own'].map((k) => [k, argv.includes(k)]),
  );
  // A shared WebAssembly memory is page-aligned, as tsccl's arena is: a SharedArrayBuffer's
  // start is not, and the cache lines the words fall on would move from run to run.
  const sab = new WebAssembly.Memory({ initial: 1, maximum: 1, shared: true }).buffer;
  const us = await Promise.all(
    [0, 1].map(
      (rank) =>
        new Promise((resolve, reject) => {
          const w = new Worker(new URL(import.meta.url), { workerData: { sab, rank, calls, options } });
          w.once('message', resolve);
          w.once('error', reject);
        }),
    ),
  );
  const on = Object.keys(options).filter((k) => options[k]);
  console.log(
    `8 B exchange, ${calls} calls, ${on.length > 0 ? on.join(' + ') : 'flag and data only'}: ${us[0].toFixed(3)} us per call`,
  );
} else {
  const { sab, rank, calls, options } = workerData;
  const words = new Int32Array(sab);
  // Each rank's block: status line at word 0, flag and header at word 64 (a cache line of 16
  // words), data at word 80 (the next line), or with `line` at word 72 (the flag's line).
  const me = rank * 4096;
  const peer = (1 - rank) * 4096;
  const data = options.line ? 72 : 80;
  const x = new Float32Array([1, 2]);
  const y = new Float32Array(2);
  const xBytes = new Uint8Array(x.buffer);
  const myData = new Uint8Array(sab, (me + data) * 4, 8);
  const myFloats = new Float32Array(sab, (me + data) * 4, 2);
  const peerData = new Float32Array(sab, (peer + data) * 4, 2);
  const DONE = Promise.resolve();
  const call = (seq) => {
    if (options.status) {
      Atomics.store(words, me, seq);
      if (options.notify) Atomics.notify(words, me);
      Atomics.load(words, peer);
    }
    if (options.copy) myData.set(xBytes);
    else {
      myFloats[0] = x[0];
      myFloats[1] = x[1];
    }
    if (options.header) {
      words[me + 65] = 8;
      words[me + 66] = 3;
      words[me + 67] = 0;
      words[me + 68] = -1;
    }
    Atomics.store(words, me + 64, seq);
    if (options.notify) Atomics.notify(words, me + 64);
    while (Atomics.load(words, peer + 64) < seq) {}
    if (options.own) {
      const first = rank === 0 ? myFloats : peerData;
      const second = rank === 0 ? peerData : myFloats;
      y[0] = first[0] + second[0];
      y[1] = first[1] + second[1];
    } else {
      y[0] = x[0] + peerData[0];
      y[1] = x[1] + peerData[1];
    }
    if (options.status) Atomics.store(words, me + 6, seq);
    return DONE;
  };
  let seq = 0;
  let start = 0;
  if (options.sync) {
    for (let i = 0; i < 100_000; i++) call(++seq);
    start = performance.now();
    for (let i = 0; i < calls; i++) call(++seq);
  } else {
    for (let i = 0; i < 100_000; i++) await call(++seq);
    start = performance.now();
    for (let i = 0; i < calls; i++) await call(++seq);
  }
  const { parentPort } = await import('node:worker_threads');
  parentPort.postMessage(((performance.now() - start) * 1000) / calls);
}
