// A job's first call of each shape, right after init: all-reduces of counts the communicator has
// not run before (each a shape of its own, so the tuner's choice and the call's run are made
// afresh), each called twice. Prints, per rank 0, the first five such calls in us, the median of
// first calls over all shapes and over the last 100, and the median of the second calls (the
// same shape on new array objects, which reuses the kept choice).
// Usage: node bin/tsccl.js run -n 2 bench/bounds/new-shapes.mjs [shapes=400] [from=2]
import { init } from '../../dist/src/comm/init.js';

export default async function newShapes({ args }) {
  const opts = Object.fromEntries(args.map((a) => a.split('=')).map(([k, v]) => [k, Number(v)]));
  const shapes = opts.shapes ?? 400;
  const from = opts.from ?? 2;
  const comm = await init();
  const input = comm.alloc('float32', from + shapes);
  const output = comm.alloc('float32', from + shapes);
  const first = [];
  const second = [];
  for (let count = from; count < from + shapes; count++) {
    for (const times of [first, second]) {
      const start = performance.now();
      await comm.allReduce(input.subarray(0, count), { output: output.subarray(0, count) });
      times.push((performance.now() - start) * 1000);
    }
  }
  const median = (a) => [...a].sort((x, y) => x - y)[a.length >> 1];
  if (comm.rank === 0)
    console.log(
      `${comm.size} ranks, ${shapes} shapes of ${from}-${from + shapes - 1} floats: first calls ${first
        .slice(0, 5)
        .map((t) => t.toFixed(0))
        .join(
          ' ',
        )} us, median ${median(first).toFixed(1)}, last 100 ${median(first.slice(-100)).toFixed(1)}; second calls median ${median(second).toFixed(1)}`,
    );
  await comm.destroy();
}
