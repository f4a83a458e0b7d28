#!/usr/bin/env node
// Data-parallel training of a small GPT (tsccl/train): samples/s from 1 to 2 and 4 ranks, with
// each step split into forward, backward and exposed communication (from the last rank's end of
// backward compute to the last rank's end of waiting for its gradients; the slowest rank's own
// wait, which also holds its peer's longer compute, beside it), inline and on progress engines.
// Each rank trains on --rows sequences per step (weak scaling, as DDP jobs do). Configurations:
// thread ranks, 2 process ranks over loopback TCP, and 2 hosts x 1 process over network
// namespaces with the link shaped to 1 Gbit/s (needs root and iproute2; skipped with the reason
// otherwise).
// Usage: node bench/train/ddp.mjs [--dim 256] [--layers 4] [--seq 64] [--rows 8] [--bucket-mb 4]
//        [--steps 10] [--backend wasm|cpu] [--only threads|tcp|netns]
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { launch } from '../../dist/src/launch/launch.js';
import { run } from '../../dist/src/launch/run.js';
import { createNetnsStar, netnsUnavailable } from '../../dist/test/harness/netns.js';
import { exposedCommMs } from '../lib/exposed-comm.mjs';
import { netnsJob } from '../lib/netns-job.mjs';

const { values } = parseArgs({
  options: {
    dim: { type: 'string', default: '256' },
    layers: { type: 'string', default: '4' },
    seq: { type: 'string', default: '64' },
    rows: { type: 'string', default: '8' },
    'bucket-mb': { type: 'string', default: '4' },
    steps: { type: 'string', default: '10' },
    backend: { type: 'string', default: 'wasm' },
    only: { type: 'string' },
  },
});
const script = fileURLToPath(new URL('./ddp-rank.mjs', import.meta.url));
const jobArgs = (progress) => [
  JSON.stringify({
    progress,
    steps: Number(values.steps),
    warm: 3,
    dim: Number(values.dim),
    layers: Number(values.layers),
    seqLen: Number(values.seq),
    rowsPerRank: Number(values.rows),
    bucketMb: Number(values['bucket-mb']),
    backend: values.backend,
  }),
];

/** The slowest rank's figures: a step ends when every rank's has. */
function slowest(results) {
  const max = (key) => Math.max(...results.map((r) => r[key]));
  return {
    ...results[0],
    ...Object.fromEntries(
      ['forwardMs', 'backwardMs', 'exposedCommMs', 'optimizerMs', 'stepMs'].map((k) => [k, max(k)]),
    ),
    exposedMs: exposedCommMs(results),
  };
}

const f = (x) => x.toFixed(0);
function row(config, ranks, progress, r) {
  const samples = (Number(values.rows) * ranks * 1000) / r.stepMs;
  console.log(
    `| ${config} | ${progress} | ${f(r.forwardMs)} | ${f(r.backwardMs)} | ${f(r.exposedMs)} | ${f(r.exposedCommMs)} | ${f(r.optimizerMs)} | ${f(r.stepMs)} | ${((100 * r.exposedMs) / r.stepMs).toFixed(0)}% | ${samples.toFixed(1)} |`,
  );
}

const single = (await run({ ranks: 1, script, args: jobArgs('inline'), output: 'silent', timeoutMs: 600_000 }))
  .results[0];
console.log(
  `# GPT dim ${values.dim}, ${values.layers} layers, seq ${values.seq}: ${single.params} parameters (${((single.params * 4) / 2 ** 20).toFixed(1)} MiB of float32 gradients), ${values.rows} sequences a rank a step, buckets of ${values['bucket-mb']} MiB, ${values.backend} backend; medians of ${values.steps} steps after 3; ${new Date().toISOString()}`,
);
console.log(
  '| configuration | progress | forward ms | backward ms | exposed comm ms | slowest rank: its wait ms | optimizer ms | step ms | exposed share | samples/s |\n|---|---|---:|---:|---:|---:|---:|---:|---:|---:|',
);
row('1 rank', 1, 'inline', slowest([single]));
for (const progress of ['inline', 'engine']) {
  if (!values.only || values.only === 'threads')
    for (const ranks of [2, 4]) {
      const { results } = await run({ ranks, script, args: jobArgs(progress), output: 'silent', timeoutMs: 600_000 });
      row(`${ranks} thread ranks`, ranks, progress, slowest(results));
    }
  if (!values.only || values.only === 'tcp')
    for (const ranks of [2, 4]) {
      const { results } = await launch({
        nprocPerNode: ranks,
        mode: 'processes',
        script,
        args: jobArgs(progress),
        output: 'silent',
        timeoutMs: 600_000,
      });
      row(`${ranks} process ranks, loopback TCP`, ranks, progress, slowest(results));
    }
}
if (!values.only || values.only === 'netns') {
  const why = netnsUnavailable();
  if (why) console.log(`\n# 2 hosts x 1 process over namespaces skipped: ${why}`);
  else {
    const star = createNetnsStar('tr', 2, '1gbit');
    try {
      let port = 29870;
      for (const progress of ['inline', 'engine'])
        row(
          '2 hosts x 1 process, veth 1 Gbit/s',
          2,
          progress,
          slowest(await netnsJob(star, { script, args: jobArgs(progress), port: port++, token: 'train-netns' })),
        );
    } finally {
      star.close();
    }
  }
}
