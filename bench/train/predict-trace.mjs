#!/usr/bin/env node
// The simulator on training steps that really ran: a GPT trained on 2 ranks writes a trace of its
// timed steps (each layer's compute, each collective and message, each wait), and
// `tsccl sim train --trace` replays it with every call priced by the simulator, on `--topo local`
// (thread ranks, or `--procs` for TCP) or on the emulated cluster's topology file (2 hosts x 1
// process over network namespaces joined by veth links shaped to 1 Gbit/s,
// bench/lib/netns-topology.mjs). Compared: the exposed communication (the ranks' waits), measured
// against predicted, per rank, for calls inline and on engines. dp: data parallelism (waits for
// the gradients); pp: a 2-stage pipeline, 1F1B over 4 micro-batches (waits for the neighbour's
// activations and gradients). The predicted wait is split into what the trace measured (waiting
// for the other rank to issue; garbage collection on the waiting thread after the calls ended) and
// the simulator's own part; the last column sets that part against the measured wait less the same two.
// Usage: node bench/train/predict-trace.mjs [--dim 256] [--layers 4] [--bucket-mb 4] [--steps 8]
//        [--configs dp-threads-inline,...] (dp|pp)-(threads|tcp|netns)-(inline|engine)
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { launch } from '../../dist/src/launch/launch.js';
import { run } from '../../dist/src/launch/run.js';
import { createNetnsStar, netnsUnavailable } from '../../dist/test/harness/netns.js';
import { netnsJob } from '../lib/netns-job.mjs';
import { netnsTopology } from '../lib/netns-topology.mjs';

const { values } = parseArgs({
  options: {
    dim: { type: 'string', default: '256' },
    layers: { type: 'string', default: '4' },
    'bucket-mb': { type: 'string', default: '4' },
    steps: { type: 'string', default: '8' },
    configs: {
      type: 'string',
      default:
        'dp-threads-inline,dp-threads-engine,dp-tcp-inline,dp-tcp-engine,dp-netns-inline,dp-netns-engine,pp-threads-engine,pp-tcp-engine,pp-netns-engine',
    },
  },
});
const scripts = {
  dp: fileURLToPath(new URL('./ddp-rank.mjs', import.meta.url)),
  pp: fileURLToPath(new URL('./pipeline-rank.mjs', import.meta.url)),
};
const bin = fileURLToPath(new URL('../../bin/tsccl.js', import.meta.url));
const dir = mkdtempSync(join(tmpdir(), 'tsccl-predict-trace-'));

function replay(tracePath, topo) {
  const argv = ['sim', 'train', '--trace', tracePath, ...topo, '--format', 'json'];
  return JSON.parse(execFileSync(process.execPath, [bin, ...argv], { encoding: 'utf8' }));
}

let star;
let port = 29890;
/** Runs the job of one configuration; the --topo arguments its replay takes, or why it cannot run. */
async function runConfig(script, transport, args) {
  const job = { script, args: [args], output: 'silent', timeoutMs: 900_000 };
  if (transport === 'threads') {
    await run({ ranks: 2, ...job });
    return { topo: ['--topo', 'local', '-g', '2'] };
  }
  if (transport === 'tcp') {
    await launch({ nprocPerNode: 2, mode: 'processes', ...job });
    return { topo: ['--topo', 'local', '-g', '2', '--procs'] };
  }
  const why = netnsUnavailable();
  if (why) return { skipped: why };
  star ??= createNetnsStar('pd', 2, '1gbit');
  await netnsJob(star, { script, args: [args], port: port++, token: 'predict-trace' });
  return { topo: ['--topo', netnsTopology({ hosts: 2, perHost: 1, rate: '1gbit' }).file] };
}

try {
  console.log(
    `# GPT dim ${values.dim}, ${values.layers} blocks, 2 ranks (dp: ${values['bucket-mb']} MiB buckets; pp: 1F1B, 4 micro-batches); ${values.steps} traced steps after 2; ${new Date().toISOString()}`,
  );
  console.log(
    '| job, ranks, calls | calls and messages | measured wait, rank 0 / rank 1 (ms) | predicted (ms) | of it, for peers (ms) | of it, in gc (ms) | predicted / measured, rank 0 / rank 1 | both ranks | the rest: measured / predicted (ms) |\n|---|---:|---|---|---|---|---|---:|---|',
  );
  for (const config of values.configs.split(',')) {
    const [job, transport, progress] = config.split('-');
    const label = `${job}, ${{ threads: '2 thread ranks', tcp: '2 processes, loopback TCP', netns: '2 hosts x 1 process, 1 Gbit/s' }[transport]}, ${progress}`;
    const tracePath = join(dir, `${config}.json`);
    const shape = { steps: Number(values.steps), warm: 2, dim: Number(values.dim), layers: Number(values.layers) };
    const args = JSON.stringify(
      job === 'dp'
        ? {
            ...shape,
            progress,
            seqLen: 64,
            rowsPerRank: 8,
            bucketMb: Number(values['bucket-mb']),
            backend: 'wasm',
            tracePath,
          }
        : { ...shape, progress, seqLen: 64, batchSize: 32, microBatches: 4, schedule: '1f1b', tracePath },
    );
    const ran = await runConfig(scripts[job], transport, args);
    if (ran.skipped) {
      console.log(`| ${label} | skipped: ${ran.skipped} |`);
      continue;
    }
    const report = replay(tracePath, ran.topo);
    const group = job === 'dp' ? 'dp' : 'pipeline';
    const waits = [0, 1].map((rank) => report.groups.find((g) => g.group === group && g.rank === rank));
    const sum = (key) => waits.reduce((a, g) => a + g[key], 0);
    const [measured, predicted, peers, gc] = ['measuredMs', 'predictedMs', 'peersMs', 'collectionsMs'].map(sum);
    const per = (key) => waits.map((g) => g[key].toFixed(1)).join(' / ');
    console.log(
      `| ${label} | ${report.calls + report.messages} | ${per('measuredMs')} | ${per('predictedMs')} | ${per('peersMs')} | ${per('collectionsMs')} | ${waits.map((g) => (g.predictedMs / g.measuredMs).toFixed(2)).join(' / ')} | ${(predicted / measured).toFixed(2)} | ${(measured - peers - gc).toFixed(1)} / ${(predicted - peers - gc).toFixed(1)} |`,
    );
  }
} finally {
  star?.close();
  rmSync(dir, { recursive: true, force: true });
}
