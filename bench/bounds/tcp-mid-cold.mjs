// A fresh job's first mid-size all-reduces over TCP: after init (and `pre` 8 B calls), `blocks`
// blocks of `calls` all-reduces of `bytes`, out of place. Per block: the mean, median and 90th
// percentile us per call, and the calls over 1 ms with their share of the block's time; with the
// algorithm the tuner ran.
// Usage: node bin/tsccl.js launch --nproc-per-node 2 bench/bounds/tcp-mid-cold.mjs [bytes=8192] [pre=0] [blocks=6] [calls=500]
import { init } from '../../dist/src/index.js';

const STALL_US = 1000;

function blockLine(times) {
  const sorted = [...times].sort((a, b) => a - b);
  const total = times.reduce((sum, t) => sum + t, 0);
  const stalls = times.filter((t) => t > STALL_US);
  const stalled = stalls.reduce((sum, t) => sum + t, 0);
  const at = (q) => sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))].toFixed(0);
  return `mean ${(total / times.length).toFixed(0)}, median ${at(0.5)}, p90 ${at(0.9)}; ${stalls.length} over 1 ms, ${((100 * stalled) / total).toFixed(0)}% of the time`;
}

export default async function tcpMidCold({ args }) {
  const [bytes = 8192, pre = 0, blocks = 6, calls = 500] = args.map(Number);
  const comm = await init();
  const small = new Float32Array(2);
  for (let i = 0; i < pre; i++) await comm.allReduce(small, { op: 'sum' });
  const input = new Float32Array(bytes / 4);
  const output = new Float32Array(bytes / 4);
  const lines = [];
  for (let b = 0; b < blocks; b++) {
    const times = [];
    for (let i = 0; i < calls; i++) {
      const started = performance.now();
      await comm.allReduce(input, { op: 'sum', output });
      times.push((performance.now() - started) * 1000);
    }
    lines.push(`  block ${b + 1}: ${blockLine(times)}`);
  }
  const { algorithm } = comm.predict('allReduce', bytes);
  if (comm.rank === 0)
    console.log(
      `${bytes} B after ${pre} 8 B calls (${algorithm}), us per call in blocks of ${calls}:\n${lines.join('\n')}`,
    );
  await comm.destroy();
}
