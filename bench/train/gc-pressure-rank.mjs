// One rank of bench/train/gc-pressure.mjs: all-reduces, each after a stretch of compute that
// either only does arithmetic or also allocates arrays as a training step's gradients do.
const arithmetic = (ms) => {
  const from = performance.now();
  let x = 0;
  while (performance.now() - from < ms) x += Math.sqrt(x + 1);
  return x;
};
const allocating = (ms, elements) => {
  const from = performance.now();
  let kept = [];
  while (performance.now() - from < ms) {
    kept.push(new Float32Array(elements).fill(1));
    if (kept.length > 8) kept = [];
  }
  return kept.length;
};

export default async function main({ args }) {
  const { elements, calls, gapMs } = JSON.parse(args[0]);
  const { init } = await import('../../dist/src/progress/init.js');
  const comm = await init({ timeoutMs: 120_000 });
  const x = comm.alloc('float32', elements).fill(1);
  const times = { arithmetic: [], allocating: [] };
  for (let i = 0; i < calls; i++) {
    for (const kind of ['arithmetic', 'allocating']) {
      await comm.barrier();
      if (kind === 'arithmetic') arithmetic(gapMs);
      else allocating(gapMs, elements);
      await comm.barrier();
      const started = performance.now();
      await comm.allReduce(x);
      times[kind].push(performance.now() - started);
    }
  }
  await comm.destroy();
  return times;
}
