#!/usr/bin/env node
// All-reduce of float32 data between two "hosts" (network namespaces on one bridge, links shaped
// with tc to --rate), uncompressed and in each compression format, side by side in one run.
// Prints the time per call, the speed-up over uncompressed, and the largest error relative to
// the largest exact value. Needs root and iproute2.
// Usage: node bench/compression/netns.mjs [--rate 1gbit] [--per-host 1] [--sizes 1,16,64,256] [--iters 3]
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { createNetnsStar, netnsUnavailable } from '../../dist/test/harness/netns.js';
import { netnsJob } from '../lib/netns-job.mjs';

const { values } = parseArgs({
  options: {
    rate: { type: 'string', default: '1gbit' },
    'per-host': { type: 'string', default: '1' },
    sizes: { type: 'string', default: '1,16,64,256' },
    iters: { type: 'string', default: '3' },
    formats: { type: 'string', default: 'none,fp16,bf16,fp8e4m3,fp8e5m2,int8,int4' },
  },
});
const why = netnsUnavailable();
if (why) {
  console.error(`compression netns bench: ${why}`);
  process.exit(2);
}
const formats = values.formats.split(',');
const args = [JSON.stringify({ sizesMiB: values.sizes.split(',').map(Number), formats, iters: Number(values.iters) })];
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
console.log(
  `# all-reduce float32, 2 hosts x ${values['per-host']} process(es), links ${values.rate}, ${new Date().toISOString().slice(0, 10)}`,
);
console.log('| size | format | ms per call | speed-up vs none | max error / max |exact| |');
console.log('|---:|---|---:|---:|---:|');
for (const row of rows) {
  const base = rows.find((r) => r.mib === row.mib && r.format === 'none');
  console.log(
    `| ${row.mib} MiB | ${row.format} | ${row.ms.toFixed(1)} | ${(base.ms / row.ms).toFixed(2)}x | ${row.format === 'none' ? '0' : row.maxError.toExponential(2)} |`,
  );
}
