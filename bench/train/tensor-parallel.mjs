#!/usr/bin/env node
// Tensor-parallel training on thread ranks, inline, on progress engines, and under progress
// 'auto' (the tuner runs each call inline or on the engine): step time of a GPT split across 2
// ranks, whose every block all-reduces its activations forward and their gradients backward.
// Usage: node bench/train/tensor-parallel.mjs [--ranks 2] [--dim 128] [--layers 4] [--seq 64]
//        [--batch 8] [--steps 5]
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { run } from '../../dist/src/launch/run.js';

const { values } = parseArgs({
  options: {
    ranks: { type: 'string', default: '2' },
    dim: { type: 'string', default: '128' },
    layers: { type: 'string', default: '4' },
    seq: { type: 'string', default: '64' },
    batch: { type: 'string', default: '8' },
    steps: { type: 'string', default: '5' },
  },
});
const script = fileURLToPath(new URL('./tensor-parallel-rank.mjs', import.meta.url));
const ranks = Number(values.ranks);
console.log(
  `# GPT dim ${values.dim}, ${values.layers} blocks, seq ${values.seq}, ${values.batch} sequences a step, split across ${ranks} thread ranks; median of ${values.steps} steps after 2; ${new Date().toISOString()}`,
);
console.log("| progress | step ms | step / inline | where 'auto' ran them |\n|---|---:|---:|---|");
let inlineMs;
for (const progress of ['inline', 'engine', 'auto']) {
  const args = JSON.stringify({
    progress,
    steps: Number(values.steps),
    warm: 2,
    dim: Number(values.dim),
    layers: Number(values.layers),
    seqLen: Number(values.seq),
    batchSize: Number(values.batch),
  });
  const { results } = await run({ ranks, script, args: [args], output: 'silent', timeoutMs: 600_000 });
  const stepMs = Math.max(...results.map((r) => r.stepMs));
  inlineMs ??= stepMs;
  const where =
    results[0].handOffUs !== undefined ? `${results[0].paths} (hand-off ${results[0].handOffUs.toFixed(0)} us)` : '';
  console.log(`| ${progress} | ${stepMs.toFixed(1)} | ${(stepMs / inlineMs).toFixed(2)} | ${where} |`);
}
