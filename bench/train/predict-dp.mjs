#!/usr/bin/env node
// The simulator on a training step that really ran: the gradient all-reduce of a GPT trained
// data-parallel on 2 ranks (inline, so every bucket's all-reduce runs after backward), measured,
// against `tsccl sim train --model-file` on `--topo local` (thread ranks, or `--procs` for TCP).
// Measured: of each rank's median wait after backward, the smaller; the rank that finishes
// backward last waits for the transfer only, the other also for its peer's backward.
// Predicted: the simulator's one all-reduce of every gradient (float32) on this machine's profile;
// beside it, that one call measured in the same job (20 calls after a barrier each, the median).
// Usage: node bench/train/predict-dp.mjs [--dim 256] [--layers 4] [--bucket-mb 4] [--steps 6]
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { launch } from '../../dist/src/launch/launch.js';
import { run } from '../../dist/src/launch/run.js';

const { values } = parseArgs({
  options: {
    dim: { type: 'string', default: '256' },
    layers: { type: 'string', default: '4' },
    'bucket-mb': { type: 'string', default: '4' },
    steps: { type: 'string', default: '6' },
  },
});
const script = fileURLToPath(new URL('./ddp-rank.mjs', import.meta.url));
const bin = fileURLToPath(new URL('../../bin/tsccl.js', import.meta.url));
const dir = mkdtempSync(join(tmpdir(), 'tsccl-predict-dp-'));
const specPath = join(dir, 'model.json');
const args = JSON.stringify({
  progress: 'inline',
  steps: Number(values.steps),
  warm: 2,
  dim: Number(values.dim),
  layers: Number(values.layers),
  seqLen: 64,
  rowsPerRank: 8,
  bucketMb: Number(values['bucket-mb']),
  backend: 'wasm',
  specPath,
});

function predictedMs(procs) {
  const argv = [
    'sim',
    'train',
    '--model-file',
    specPath,
    '--topo',
    'local',
    '--dp',
    '2',
    '-g',
    '2',
    '--grad-bytes',
    '4',
    '--format',
    'json',
  ];
  const report = JSON.parse(
    execFileSync(process.execPath, [bin, ...argv, ...(procs ? ['--procs'] : [])], { encoding: 'utf8' }),
  );
  return report.collectives.find((c) => c.group === 'dp').timePerCallUs / 1000;
}

try {
  console.log(
    `# GPT dim ${values.dim}, ${values.layers} blocks, ${values['bucket-mb']} MiB buckets, 2 ranks inline; medians of ${values.steps} steps after 2; ${new Date().toISOString()}`,
  );
  console.log(
    '| ranks | wait after backward, rank 0 / rank 1 (ms) | the smaller | one all-reduce of every gradient, measured (ms) | predicted (ms) | predicted / wait | predicted / one call |\n|---|---|---:|---:|---:|---:|---:|',
  );
  for (const [name, procs] of [
    ['2 thread ranks', false],
    ['2 processes, loopback TCP', true],
  ]) {
    const { results } = procs
      ? await launch({ nprocPerNode: 2, mode: 'processes', script, args: [args], output: 'silent', timeoutMs: 900_000 })
      : await run({ ranks: 2, script, args: [args], output: 'silent', timeoutMs: 900_000 });
    const waits = results.map((r) => r.exposedCommMs);
    const measured = Math.min(...waits);
    const predicted = predictedMs(procs);
    const lone = Math.max(...results.map((r) => r.loneAllReduceMs));
    console.log(
      `| ${name} | ${waits.map((w) => w.toFixed(1)).join(' / ')} | ${measured.toFixed(1)} | ${lone.toFixed(1)} | ${predicted.toFixed(1)} | ${(predicted / measured).toFixed(2)} | ${(predicted / lone).toFixed(2)} |`,
    );
  }
} finally {
  rmSync(dir, { recursive: true, force: true });
}
