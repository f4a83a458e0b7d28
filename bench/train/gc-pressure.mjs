#!/usr/bin/env node
// Why an all-reduce inside a training step takes longer than the same call in `tsccl bench`:
// 2 thread ranks all-reduce a bucket-sized array right after a stretch of compute, the two kinds
// of compute taking turns: arithmetic only, or arithmetic that allocates arrays of the bucket's
// size (as reading a step's gradients out of TensorFlow.js does), whose garbage V8 collects on the
// ranks' threads and its helper threads while the all-reduce runs.
// Usage: node bench/train/gc-pressure.mjs [--elements 800000] [--calls 15] [--gap-ms 300]
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { run } from '../../dist/src/launch/run.js';

const { values } = parseArgs({
  options: {
    elements: { type: 'string', default: '800000' },
    calls: { type: 'string', default: '15' },
    'gap-ms': { type: 'string', default: '300' },
  },
});
const script = fileURLToPath(new URL('./gc-pressure-rank.mjs', import.meta.url));
const args = [
  JSON.stringify({ elements: Number(values.elements), calls: Number(values.calls), gapMs: Number(values['gap-ms']) }),
];
const { results } = await run({ ranks: 2, script, args, output: 'silent', timeoutMs: 600_000 });
const quantile = (xs, q) => [...xs].sort((a, b) => a - b)[Math.floor(q * (xs.length - 1))];
console.log(
  `# all-reduce of ${values.elements} float32 on 2 thread ranks after ${values['gap-ms']} ms of compute, ${values.calls} calls each, slower rank; ${new Date().toISOString()}`,
);
console.log('| compute before the call | median (ms) | 90th percentile (ms) |\n|---|---:|---:|');
const rows = {};
for (const kind of ['arithmetic', 'allocating']) {
  const slower = results[0][kind].map((t, i) => Math.max(t, results[1][kind][i]));
  rows[kind] = quantile(slower, 0.5);
  console.log(`| ${kind} | ${rows[kind].toFixed(2)} | ${quantile(slower, 0.9).toFixed(2)} |`);
}
console.log(`# median ratio allocating / arithmetic: ${(rows.allocating / rows.arithmetic).toFixed(2)}`);
