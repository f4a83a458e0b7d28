// What one small TCP call leaves to the garbage collector, in one job of 2 process ranks: the
// heap bytes an 8 B all-reduce allocates per call (heap growth plus what every collection freed,
// from v8.GCProfiler), the collections it causes and their pauses. A collection on one rank
// stalls its peer too, so bytes per call are time, though time on this machine is too noisy to
// show a few percent; bytes are not.
// Usage: node bin/tsccl.js launch --nproc-per-node 2 bench/bounds/tcp-call-garbage.mjs [calls=100000]
import v8 from 'node:v8';
import { init } from '../../dist/src/comm/init.js';

export default async function tcpCallGarbage({ args }) {
  const [calls = 100000] = args.map(Number);
  const comm = await init({ timeoutMs: 60000 });
  if (comm.transportKind !== 'tcp') throw new Error('run it as process ranks: tsccl launch --nproc-per-node 2 ...');
  const x = new Float32Array(2).fill(1);
  const y = new Float32Array(2);
  for (let i = 0; i < 5000; i++) await comm.allReduce(x, { output: y });
  const profiler = new v8.GCProfiler();
  const usedBefore = v8.getHeapStatistics().used_heap_size;
  profiler.start();
  const start = performance.now();
  for (let i = 0; i < calls; i++) await comm.allReduce(x, { output: y });
  const us = ((performance.now() - start) * 1000) / calls;
  const { statistics } = profiler.stop();
  const freed = statistics.reduce(
    (sum, gc) => sum + gc.beforeGC.heapStatistics.usedHeapSize - gc.afterGC.heapStatistics.usedHeapSize,
    0,
  );
  const allocated = v8.getHeapStatistics().used_heap_size - usedBefore + freed;
  const pauses = statistics.map((gc) => gc.cost).sort((a, b) => a - b);
  const pauseMs = pauses.reduce((a, b) => a + b, 0) / 1000;
  await comm.destroy();
  return `${(allocated / calls).toFixed(0)} B a call; ${statistics.length} collections, median pause ${(pauses[pauses.length >> 1] ?? 0).toFixed(0)} us, ${((pauseMs * 1000) / calls).toFixed(2)} us a call in pauses; ${us.toFixed(2)} us a call`;
}
