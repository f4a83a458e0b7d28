// One rank of bench/avg/avg.mjs: median time of sum and avg all-reduces, arena and plain arrays.
export default async function main({ args }) {
  const { root, elements, calls } = JSON.parse(args[0]);
  const { init } = await import(`${root}/dist/src/progress/init.js`);
  const comm = await init({ timeoutMs: 120_000 });
  const arrays = { arena: comm.alloc('float32', elements).fill(1), plain: new Float32Array(elements).fill(1) };
  const medians = {};
  for (const [kind, x] of Object.entries(arrays)) {
    for (const op of ['sum', 'avg']) {
      const times = [];
      for (let i = 0; i < calls; i++) {
        await comm.barrier();
        const started = performance.now();
        await comm.allReduce(x, { op });
        times.push(performance.now() - started);
      }
      times.sort((a, b) => a - b);
      medians[`${kind} ${op}`] = times[times.length >> 1];
    }
  }
  await comm.destroy();
  return medians;
}
