// A fresh job's first mid-size all-reduces over TCP: after init (and `pre` 8 B calls), `blocks`
// blocks of `calls` all-reduces of `bytes`, out of place, and the mean us per call of each block,
// with the algorithm the tuner ran.
// Usage: node bin/tsccl.js launch --nproc-per-node 2 bench/bounds/tcp-mid-cold.mjs [bytes=8192] [pre=0] [blocks=6] [calls=500]
import { init } from '../../dist/src/index.js';

export default async function tcpMidCold({ args }) {
  const [bytes = 8192, pre = 0, blocks = 6, calls = 500] = args.map(Number);
  const comm = await init();
  const small = new Float32Array(2);
  for (let i = 0; i < pre; i++) await comm.allReduce(small, { op: 'sum' });
  const input = new Float32Array(bytes / 4);
  const output = new Float32Array(bytes / 4);
  const means = [];
  for (let b = 0; b < blocks; b++) {
    const started = performance.now();
    for (let i = 0; i < calls; i++) await comm.allReduce(input, { op: 'sum', output });
    means.push((((performance.now() - started) * 1000) / calls).toFixed(0));
  }
  const { algorithm } = comm.predict('allReduce', bytes);
  if (comm.rank === 0)
    console.log(
      `${bytes} B after ${pre} 8 B calls (${algorithm}), us per call per block of ${calls}: ${means.join(' ')}`,
    );
  await comm.destroy();
}
