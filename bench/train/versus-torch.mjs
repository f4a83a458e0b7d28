#!/usr/bin/env node
// Exposed communication of data-parallel training, tsccl/train against PyTorch DDP over Gloo
// (Debian's python3-torch), on the same GPT shape, parameter count and bucket size, 2 ranks of one
// intra-op thread each: 2 processes over loopback TCP, and 2 hosts x 1 process over network
// namespaces with the link shaped to 1 Gbit/s. The compute engines differ (TensorFlow.js wasm,
// PyTorch CPU), so the comparison is of communication. Exposed communication, per step: from the
// moment the last rank's backward compute ended to the moment the last rank's wait for its
// gradients ended (each rank's two moments: tsccl/train's step report, and for PyTorch a timed
// communication hook, torch-ddp.py); a rank's own wait after backward also holds its peer's
// longer compute. Beside it the older, noisier subtraction: median step - median step without
// communication (no_sync, the two alternating) - (for tsccl) the update, which its no-sync step skips.
// Usage: node bench/train/versus-torch.mjs [--dim 256] [--layers 4] [--bucket-mb 4] [--steps 6]
//   [--progress inline,engine,auto] [--only loopback] [--python /usr/bin/python3]
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { launch } from '../../dist/src/launch/launch.js';
import { TextCorpus, generateText } from '../../dist/src/train/index.js';
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
    python: { type: 'string', default: '/usr/bin/python3' },
    only: { type: 'string' },
    progress: { type: 'string', default: 'inline,engine,auto' },
  },
});
const progresses = values.progress.split(',');
const tsScript = fileURLToPath(new URL('./ddp-rank.mjs', import.meta.url));
const pyScript = fileURLToPath(new URL('./torch-ddp.py', import.meta.url));
const shape = {
  dim: Number(values.dim),
  layers: Number(values.layers),
  seqLen: Number(values.seq),
  rowsPerRank: Number(values.rows),
  bucketMb: Number(values['bucket-mb']),
  steps: Number(values.steps),
  warm: 2,
};
const tsArgs = (progress) => JSON.stringify({ ...shape, progress, backend: 'wasm' });

const slowest = (results, key) => Math.max(...results.map((r) => r[key]));
const resultsOf = (out) => [...out.matchAll(/result: (\{.*\})$/gm)].map((m) => JSON.parse(m[1]));

const torchRanks = new Set();

function python(ns, rank, port, master, ifname) {
  const env = { ...process.env, RANK: String(rank), WORLD_SIZE: '2', MASTER_ADDR: master, MASTER_PORT: String(port) };
  // In a namespace the host name resolves to loopback: Gloo must be told the interface.
  if (ifname) env.GLOO_SOCKET_IFNAME = ifname;
  const argv = [pyScript, JSON.stringify({ ...shape, vocab: new TextCorpus(generateText(100_000)).vocabSize })];
  const [cmd, args] = ns ? ['ip', ['netns', 'exec', ns, values.python, ...argv]] : [values.python, argv];
  return new Promise((resolve) => {
    const child = spawn(cmd, args, { env, stdio: ['ignore', 'pipe', 'pipe'] });
    // A rank that fails leaves its peer waiting for it: end the peers too.
    torchRanks.add(child);
    child.on('exit', (code) => {
      torchRanks.delete(child);
      if (code !== 0) for (const peer of torchRanks) peer.kill('SIGKILL');
    });
    let out = '';
    child.stdout.on('data', (d) => (out += d));
    child.stderr.on('data', (d) => (out += d));
    child.on('exit', (code) => resolve(code === 0 ? out : Promise.reject(new Error(`torch rank ${rank}: ${out}`))));
  });
}

function row(config, who, r) {
  const exposed = r.stepMs - r.noSyncStepMs - (r.optimizerMs ?? 0);
  const share = (ms) => `${((100 * ms) / r.stepMs).toFixed(0)}%`;
  const [low, high] = r.rankWaitsMs.map((ms) => ms.toFixed(0));
  console.log(
    `| ${config} | ${who} | ${r.params} | ${r.stepMs.toFixed(0)} | ${r.exposedMs.toFixed(1)} | ${share(r.exposedMs)} | ${low} / ${high} | ${r.noSyncStepMs.toFixed(0)} | ${exposed.toFixed(0)} | ${share(exposed)} |`,
  );
}

const merge = (results) => ({
  stepMs: slowest(results, 'stepMs'),
  noSyncStepMs: slowest(results, 'noSyncStepMs'),
  optimizerMs: results[0].optimizerMs === undefined ? undefined : slowest(results, 'optimizerMs'),
  exposedMs: exposedCommMs(results),
  rankWaitsMs: results.map((r) => r.exposedCommMs).sort((a, b) => a - b),
  params: results[0].params,
  vocab: results[0].vocab,
});

const vocab = new TextCorpus(generateText(100_000)).vocabSize;
console.log(
  `# GPT dim ${shape.dim}, ${shape.layers} layers, seq ${shape.seqLen}, vocab ${vocab}; ${shape.rowsPerRank} sequences a rank a step; buckets of ${shape.bucketMb} MiB; medians of ${shape.steps} steps after ${shape.warm}, the slower rank's; ${new Date().toISOString()}`,
);
console.log(
  '| configuration | library | parameters | step ms | exposed comm ms | its share | each rank: wait after backward ms | no-sync step ms | step - no-sync step ms | its share |\n|---|---|---:|---:|---:|---:|---:|---:|---:|---:|',
);
if (!values.only || values.only === 'loopback') {
  for (const progress of progresses) {
    const { results } = await launch({
      nprocPerNode: 2,
      mode: 'processes',
      script: tsScript,
      args: [tsArgs(progress)],
      output: 'silent',
      timeoutMs: 900_000,
    });
    row('2 processes, loopback TCP', `tsccl ${progress}`, merge(results));
  }
  const outs = await Promise.all([0, 1].map((r) => python(undefined, r, 29931, '127.0.0.1')));
  row('2 processes, loopback TCP', 'PyTorch DDP, Gloo', merge(resultsOf(outs.join(''))));
}
const why = netnsUnavailable();
if (values.only === 'loopback') console.log('\n# namespaces not asked for');
else if (why) console.log(`\n# 2 hosts x 1 process over namespaces skipped: ${why}`);
else {
  const star = createNetnsStar('vt', 2, '1gbit');
  try {
    let port = 29940;
    for (const progress of progresses) {
      const p = port++;
      const results = await netnsJob(star, {
        script: tsScript,
        args: [tsArgs(progress)],
        port: p,
        token: 'versus-torch',
      });
      row('2 hosts x 1 process, veth 1 Gbit/s', `tsccl ${progress}`, merge(results));
    }
    const outs = await Promise.all([0, 1].map((i) => python(star.names[i], i, port, star.addresses[0], `tsvt${i}h`)));
    row('2 hosts x 1 process, veth 1 Gbit/s', 'PyTorch DDP, Gloo', merge(resultsOf(outs.join(''))));
  } finally {
    star.close();
  }
}
