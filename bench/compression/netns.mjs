#!/usr/bin/env node
// All-reduce of float32 data between two "hosts" (network namespaces on one bridge, links shaped
// with tc to --rate), uncompressed and in each compression format, side by side in one run.
// Prints the time per call, the speed-up over uncompressed, and the largest error relative to
// the largest exact value, and beside each the simulator's prediction of the same call
// (`tsccl sim --compression` on the emulated cluster's topology, bench/lib/netns-topology.mjs).
// Needs root and iproute2.
// Usage: node bench/compression/netns.mjs [--rate 1gbit] [--per-host 1] [--sizes 1,16,64,256] [--iters 3]
//        [--formats none,int8,...] [--alloc: buffers from comm.alloc]
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { createNetnsStar, netnsUnavailable } from '../../dist/test/harness/netns.js';
import { netnsJob } from '../lib/netns-job.mjs';
import { netnsTopology } from '../lib/netns-topology.mjs';
import { measureCodecGBps } from '../../dist/src/bench/codec-speed.js';
import { parseCompression } from '../../dist/src/compress/compression-spec.js';
import { simulateCompressedRow } from '../../dist/src/sim/compressed-row.js';
import { simulateRow } from '../../dist/src/sim/simulate.js';
import { tscclChooser } from '../../dist/src/tuner/sim-chooser.js';

const { values } = parseArgs({
  options: {
    rate: { type: 'string', default: '1gbit' },
    'per-host': { type: 'string', default: '1' },
    sizes: { type: 'string', default: '1,16,64,256' },
    iters: { type: 'string', default: '3' },
    formats: { type: 'string', default: 'none,fp16,bf16,fp8e4m3,fp8e5m2,int8,int4' },
    alloc: { type: 'boolean', default: false },
  },
});
const why = netnsUnavailable();
if (why) {
  console.error(`compression netns bench: ${why}`);
  process.exit(2);
}
const formats = values.formats.split(',');
const args = [
  JSON.stringify({
    sizesMiB: values.sizes.split(',').map(Number),
    formats,
    iters: Number(values.iters),
    alloc: values.alloc,
  }),
];
const star = createNetnsStar('cz', 2, values.rate);
let rows;
try {
  const script = fileURLToPath(new URL('rank.mjs', import.meta.url));
  const results = await netnsJob(star, {
    script,
    args,
    port: 29930,
    token: 'compression-bench',
    perHost: Number(values['per-host']),
  });
  // The slowest rank's time is the call's.
  rows = results[0].map((row, i) => ({ ...row, ms: Math.max(...results.map((r) => r[i].ms)) }));
} finally {
  star.close();
}
// The same calls predicted on the cluster's topology, codecs at the speed measured here now.
const { graph } = netnsTopology({ hosts: 2, perHost: Number(values['per-host']), rate: values.rate });
const codecGBps = new Map();
const predictMs = (row) => {
  const request = {
    op: 'all_reduce',
    bytes: row.mib * 2 ** 20,
    mode: 'flow',
    nvls: false,
    elementBytes: 4,
    root: 0,
    chooser: tscclChooser,
  };
  if (row.format === 'none') return simulateRow(graph, graph.accelerators, request).timeUs / 1000;
  const compression = parseCompression(row.format, {});
  if (!codecGBps.has(row.format)) codecGBps.set(row.format, measureCodecGBps(compression));
  const codec = codecGBps.get(row.format);
  return simulateCompressedRow(graph, graph.accelerators, { ...request, compression, codecGBps: codec }).timeUs / 1000;
};
console.log(
  `# all-reduce float32, 2 hosts x ${values['per-host']} process(es), links ${values.rate}, ${values.alloc ? 'buffers from comm.alloc' : 'plain Float32Array buffers'}, ${new Date().toISOString().slice(0, 10)}`,
);
console.log('| size | format | ms per call | speed-up vs none | max error / max exact | predicted ms |');
console.log('|---:|---|---:|---:|---:|---:|');
for (const row of rows) {
  const base = rows.find((r) => r.mib === row.mib && r.format === 'none');
  console.log(
    `| ${row.mib} MiB | ${row.format} | ${row.ms.toFixed(1)} | ${(base.ms / row.ms).toFixed(2)}x | ${row.format === 'none' ? '0' : row.maxError.toExponential(2)} | ${predictMs(row).toFixed(1)} |`,
  );
}
console.log(
  `# codecs measured here: ${[...codecGBps].map(([f, g]) => `${f} ${g.toFixed(1)} GB/s per pass`).join(', ')}`,
);
