#!/usr/bin/env node
// The pipeline bubble: a GPT cut into p stages (thread ranks), m micro-batches, GPipe and 1F1B.
// Each stage's idle share is the time it waited for its neighbours over the step; the formula for
// equal stages and free transfers is (p - 1) / (m + p - 1). Use p <= the cores, or stages wait
// for a core as well as for each other. Inline ranks (--progress inline) move a sent activation
// only when the sender next waits, so their stages take turns; the default is progress engines.
// Usage: node bench/train/pipeline.mjs [--stages 2] [--dim 128] [--layers 4] [--batch 32] [--steps 5]
//        [--progress engine|inline] [--schedules gpipe,1f1b] [--micro 1,2,4,8]
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { run } from '../../dist/src/launch/run.js';

const { values } = parseArgs({
  options: {
    stages: { type: 'string', default: '2' },
    dim: { type: 'string', default: '128' },
    layers: { type: 'string', default: '4' },
    seq: { type: 'string', default: '64' },
    batch: { type: 'string', default: '32' },
    steps: { type: 'string', default: '5' },
    progress: { type: 'string', default: 'engine' },
    schedules: { type: 'string', default: 'gpipe,1f1b' },
    micro: { type: 'string', default: '1,2,4,8' },
  },
});
const script = fileURLToPath(new URL('./pipeline-rank.mjs', import.meta.url));
const p = Number(values.stages);
console.log(
  `# GPT dim ${values.dim}, ${values.layers} blocks, seq ${values.seq}, ${values.batch} sequences a step, ${p} stages on thread ranks, progress ${values.progress}; medians of ${values.steps} steps after 2; ${new Date().toISOString()}`,
);
console.log(
  '| schedule | micro-batches | step ms | stage idle share (each stage) | mean | (p-1)/(m+p-1) |\n|---|---:|---:|---|---:|---:|',
);
for (const schedule of values.schedules.split(','))
  for (const microBatches of values.micro.split(',').map(Number)) {
    const args = JSON.stringify({
      schedule,
      microBatches,
      steps: Number(values.steps),
      warm: 2,
      dim: Number(values.dim),
      layers: Number(values.layers),
      seqLen: Number(values.seq),
      batchSize: Number(values.batch),
      progress: values.progress,
    });
    const { results } = await run({ ranks: p, script, args: [args], output: 'silent', timeoutMs: 900_000 });
    const shares = results.map((r) => r.waitMs / r.stepMs);
    const mean = shares.reduce((a, b) => a + b, 0) / shares.length;
    console.log(
      `| ${schedule} | ${microBatches} | ${Math.max(...results.map((r) => r.stepMs)).toFixed(0)} | ${shares.map((s) => s.toFixed(2)).join(' / ')} | ${mean.toFixed(2)} | ${((p - 1) / (microBatches + p - 1)).toFixed(2)} |`,
    );
  }
