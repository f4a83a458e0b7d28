// A fresh job's first calls as nccl-tests makes them, and who had the cores meanwhile: all-reduces
// of 8 B to 512 KiB (x4), out of place then in place, 5 untimed and 20 timed calls each, right
// after init. Prints the sequence's time, the time spent in calls over 0.4 ms, each row's median
// timed call (its pace without the stalls, and their sum over 8 B-2 KiB), and (rank 0, Linux)
// every thread of the process with the CPU time it ran and the time it waited for a core
// (/proc/self/task/*/schedstat) over the sequence: the ranks' threads, then the others (V8's
// compiler and garbage-collector workers, the launcher's thread).
// nice=N: before the sequence, rank 0 lowers the priority of every thread but the ranks' to nice N.
// settle=N: after the sequence, N calls of 8 B, and the mean us of each 10000.
// Usage: node bin/tsccl.js run -n 2 bench/bounds/cold-sequence.mjs [nice=N] [settle=N]
import { existsSync, readFileSync, readdirSync, readlinkSync } from 'node:fs';
import { setPriority } from 'node:os';
import { init } from '../../dist/src/comm/init.js';

const STALL_MS = 0.4;
const SETTLE_BLOCK = 10_000;

/** Per thread of this process: [cpu ms, wait-for-a-core ms]. */
function threadTimes() {
  const times = new Map();
  for (const tid of readdirSync('/proc/self/task')) {
    try {
      const [cpu, wait] = readFileSync(`/proc/self/task/${tid}/schedstat`, 'utf8').split(' ').map(Number);
      times.set(Number(tid), [cpu / 1e6, wait / 1e6]);
    } catch {
      // the thread ended between the listing and the read
    }
  }
  return times;
}

export default async function coldSequence({ args }) {
  const opts = Object.fromEntries(args.map((a) => a.split('=')).map(([k, v]) => [k, Number(v)]));
  const comm = await init({ timeoutMs: 60000 });
  const linux = existsSync('/proc/self/task');
  const tids = new Float64Array(comm.size);
  if (linux) {
    const me = Number(readlinkSync('/proc/thread-self').split('/').pop());
    await comm.allGather(new Float64Array([me]), { output: tids });
  }
  if (comm.rank === 0 && opts.nice > 0)
    for (const tid of threadTimes().keys()) if (!tids.includes(tid)) setPriority(tid, opts.nice);
  await comm.barrier();

  const before = comm.rank === 0 && linux ? threadTimes() : undefined;
  let stalled = 0;
  let stalls = 0;
  const medians = [];
  const start = performance.now();
  for (let bytes = 8; bytes <= 512 * 1024; bytes *= 4) {
    const input = comm.alloc('float32', bytes / 4);
    const output = comm.alloc('float32', bytes / 4);
    for (const inPlace of [false, true]) {
      const timed = [];
      for (let i = 0; i < 25; i++) {
        const t = performance.now();
        if (inPlace) await comm.allReduce(input, { op: 'sum' });
        else await comm.allReduce(input, { op: 'sum', output });
        const ms = performance.now() - t;
        if (i < 5) continue;
        timed.push(ms * 1000);
        if (ms > STALL_MS) {
          stalled += ms;
          stalls++;
        }
      }
      medians.push(timed.sort((a, b) => a - b)[timed.length >> 1]);
    }
    comm.free(input);
    comm.free(output);
  }
  const wall = performance.now() - start;
  const after = before !== undefined ? threadTimes() : undefined;

  const blocks = [];
  if (opts.settle > 0) {
    const input = comm.alloc('float32', 2);
    const output = comm.alloc('float32', 2);
    let t = performance.now();
    for (let i = 1; i <= opts.settle; i++) {
      await comm.allReduce(input, { op: 'sum', output });
      if (i % SETTLE_BLOCK === 0) {
        const now = performance.now();
        blocks.push((((now - t) * 1000) / SETTLE_BLOCK).toFixed(2));
        t = now;
      }
    }
  }
  await comm.destroy();
  if (comm.rank !== 0) return;
  const lines = [
    `${comm.size} ${comm.transportKind} ranks${opts.nice > 0 ? `, other threads at nice ${opts.nice}` : ''}: sequence ${wall.toFixed(1)} ms, ${stalls} timed calls over ${STALL_MS} ms took ${stalled.toFixed(1)} ms`,
  ];
  // Rows 0-9: 8 B to 2 KiB, out of place then in place.
  const smallSum = medians.slice(0, 10).reduce((a, b) => a + b, 0);
  lines.push(
    `  median timed call per row, us (8 B-512 KiB, out of place / in place): ${medians.map((m) => m.toFixed(1)).join(' ')}; sum over 8 B-2 KiB ${smallSum.toFixed(1)}`,
  );
  if (after !== undefined) {
    const rows = [...after].map(([tid, [cpu, wait]]) => {
      const [cpu0, wait0] = before.get(tid) ?? [0, 0];
      return { tid, rank: tids.includes(tid), cpu: cpu - cpu0, wait: wait - wait0 };
    });
    for (const rank of [true, false]) {
      const mine = rows.filter((r) => r.rank === rank && (r.cpu > 0.05 || r.wait > 0.05));
      const sum = (key) => mine.reduce((s, r) => s + r[key], 0).toFixed(1);
      lines.push(
        `  ${rank ? 'rank threads' : 'other threads'}: cpu ${sum('cpu')} ms, waited for a core ${sum('wait')} ms (${mine.map((r) => `${r.tid}: ${r.cpu.toFixed(1)}/${r.wait.toFixed(1)}`).join(', ')})`,
      );
    }
  }
  if (blocks.length > 0) lines.push(`  8 B after it, mean us of each ${SETTLE_BLOCK} calls: ${blocks.join(' ')}`);
  console.log(lines.join('\n'));
}
