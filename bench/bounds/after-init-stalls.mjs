// A fresh job's first small calls right after init: blocks of 1000 all-reduces of 8 B, and per
// block its time, how many calls took over 100 us and how long those took together. A call
// over 100 us is one whose rank, or its peer, lost its core for a while: to one of V8's
// background compiles (run with `node --log-deopt --logfile=v8.log --logfile-per-isolate` to see
// what V8 threw away and recompiled) or to a collection.
// Usage: node bin/tsccl.js run -n 2 bench/bounds/after-init-stalls.mjs [blocks=20]
import { init } from '../../dist/src/index.js';

const BLOCK_CALLS = 1000;
const STALL_MS = 0.1;

export default async function afterInitStalls({ args }) {
  const opts = Object.fromEntries(args.map((a) => a.split('=')).map(([k, v]) => [k, Number(v)]));
  const blocks = opts.blocks ?? 20;
  const comm = await init();
  const input = comm.alloc('float32', 2);
  const output = comm.alloc('float32', 2);
  const rows = [];
  for (let b = 0; b < blocks; b++) {
    let stalled = 0;
    let stalledMs = 0;
    const t = performance.now();
    for (let i = 0; i < BLOCK_CALLS; i++) {
      const s = performance.now();
      await comm.allReduce(input, { output });
      const ms = performance.now() - s;
      if (ms > STALL_MS) {
        stalled++;
        stalledMs += ms;
      }
    }
    rows.push({ ms: performance.now() - t, stalled, stalledMs });
  }
  if (comm.rank === 0) {
    const sum = (list, key) => list.reduce((s, r) => s + r[key], 0);
    const first = rows.slice(0, 5);
    console.log(
      `first ${first.length * BLOCK_CALLS} calls: ${sum(first, 'ms').toFixed(1)} ms, ${sum(first, 'stalled')} over 100 us took ${sum(first, 'stalledMs').toFixed(1)} ms; ` +
        `blocks (ms / calls over 100 us): ${rows.map((r) => `${r.ms.toFixed(1)}/${r.stalled}`).join(' ')}`,
    );
  }
  await comm.destroy();
}
