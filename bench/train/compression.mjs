#!/usr/bin/env node
// Loss curves of the small GPT of examples/train-ddp.mjs trained data-parallel on 4 thread ranks
// with the gradients sent uncompressed and compressed (bf16, int8 and int4, with and without error
// feedback), the same seed and batches: the loss every 20 steps, and the mean loss of the last 20
// steps against fp32's.
// Usage: node bench/train/compression.mjs [--steps 200] [--ranks 4]
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { run } from '../../dist/src/launch/run.js';

const { values } = parseArgs({
  options: { steps: { type: 'string', default: '200' }, ranks: { type: 'string', default: '4' } },
});
const steps = Number(values.steps);
const script = fileURLToPath(new URL('compression-rank.mjs', import.meta.url));
const configs = [
  ['none', false],
  ['bf16', false],
  ['int8', false],
  ['int8', true],
  ['int4', false],
  ['int4', true],
];
const curves = [];
for (const [compression, errorFeedback] of configs) {
  const { results } = await run({
    ranks: Number(values.ranks),
    script,
    args: [JSON.stringify({ steps, compression, errorFeedback })],
    output: 'silent',
    timeoutMs: 3_600_000,
  });
  curves.push({ label: `${compression}${errorFeedback ? ' + error feedback' : ''}`, ...results[0] });
}
const tail = (losses) => losses.slice(-20).reduce((a, b) => a + b, 0) / Math.min(20, losses.length);
const reference = tail(curves[0].losses);
const marks = Array.from({ length: Math.floor(steps / 20) }, (_, i) => i * 20).concat(steps - 1);
console.log(`# small GPT, ${values.ranks} thread ranks, ${steps} steps, ${new Date().toISOString().slice(0, 10)}`);
console.log(
  `| gradients | bytes per update | ${marks.map((s) => `loss @${s}`).join(' | ')} | mean of last 20 | vs fp32 |`,
);
console.log(`|---|---:|${marks.map(() => '---:').join('|')}|---:|---:|`);
for (const c of curves) {
  const mean = tail(c.losses);
  console.log(
    `| ${c.label} | ${c.wireBytes} | ${marks.map((s) => c.losses[s].toFixed(3)).join(' | ')} | ${mean.toFixed(4)} | ${(((mean - reference) / reference) * 100).toFixed(2)}% |`,
  );
}
