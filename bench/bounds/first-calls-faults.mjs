// A fresh job's first small calls against the page faults of the rank's thread: per window of
// 2000 back-to-back 8 B all-reduces, the calls that took over 12 us, the minor page faults of
// this rank's own thread (/proc/thread-self/stat, Linux) and the size of V8's young generation.
// The two counts track each other while V8's young generation faults its pages in
// (docs/tuning.md, TSCCL_RANK_YOUNG_GEN_MB), and while scavenges promote objects into old-space
// pages the rank has not touched yet: the last figure of a window is what its scavenges moved
// to the old space (bench/bounds/new-loop-promotion.mjs shows V8 doing so with no tsccl code).
// settle=N: N calls first, in a loop of their own; gc: a full collection first (needs
// `node --expose-gc bin/tsccl.js ...`).
// Usage: [TSCCL_RANK_YOUNG_GEN_MB=n] [TSCCL_WARMUP_MS=0] node bin/tsccl.js run -n 2 bench/bounds/first-calls-faults.mjs [windows=16] [settle=N] [gc]
import { readFileSync } from 'node:fs';
import v8 from 'node:v8';
import { init } from '../../dist/src/index.js';

const SLOW_MS = 0.012;
const WINDOW = 2000;

/** Minor faults of the calling thread: field 10 of its stat line, counted after the command name. */
const minorFaults = () => Number(readFileSync('/proc/thread-self/stat', 'utf8').split(') ')[1].split(' ')[7]);

/** `calls` all-reduces in a loop of their own, before the timed one. */
async function settleCalls(comm, calls, input, output) {
  for (let i = 0; i < calls; i++) await comm.allReduce(input, { output });
}

/** A space's used bytes in a GCProfiler heap record. */
const spaceUsed = (heap, name) => heap.heapSpaceStatistics.find((s) => s.spaceName === name).spaceUsedSize;

export default async function firstCallsFaults({ args }) {
  const windows = Number(args[0] ?? 16);
  const settle = Number(args.find((a) => a.startsWith('settle='))?.slice(7) ?? 0);
  const comm = await init({ timeoutMs: 60000 });
  const input = comm.alloc('float32', 2);
  const output = comm.alloc('float32', 2);
  if (args.includes('gc')) {
    if (typeof globalThis.gc !== 'function') throw new Error('gc needs node --expose-gc');
    globalThis.gc();
  }
  await settleCalls(comm, settle, input, output);
  const rows = [];
  for (let w = 0; w < windows; w++) {
    let slow = 0;
    const faults = minorFaults();
    const profiler = new v8.GCProfiler();
    profiler.start();
    for (let i = 0; i < WINDOW; i++) {
      const start = performance.now();
      await comm.allReduce(input, { output });
      if (performance.now() - start > SLOW_MS) slow++;
    }
    const young = v8.getHeapSpaceStatistics().find((s) => s.space_name === 'new_space');
    const promoted = profiler
      .stop()
      .statistics.filter((gc) => gc.gcType === 'Scavenge')
      .reduce((sum, gc) => sum + spaceUsed(gc.afterGC, 'old_space') - spaceUsed(gc.beforeGC, 'old_space'), 0);
    rows.push(
      `${slow}/${minorFaults() - faults}/${(young.space_size / 2 ** 20).toFixed(0)}M/${(promoted / 1024).toFixed(0)}K`,
    );
  }
  if (comm.rank === 0)
    console.log(
      `slow calls / faults / young generation / promoted by scavenges, per ${WINDOW}-call window: ${rows.join(' ')}`,
    );
  await comm.destroy();
}
