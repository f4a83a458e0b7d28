#!/usr/bin/env node
// The one-shot defaults a profile-less tuner prices with, from saved `tsccl tune` profiles: each
// profile's fixed cost (shm.oneShotUs), the 2-rank 32 KiB one-shot all-reduce its fitted rate
// reproduces (the call tune timed), and the rate with which the default profile's other figures
// reproduce that same call (tune/fit-one-shot.ts on the defaults).
// Usage: node bench/fit-default-one-shot.mjs <profile.json> [...]   (tsccl tune --out FILE)
import { readFileSync } from 'node:fs';
import { defaultProfile } from '../dist/src/topology/local-profile.js';
import { fitOneShotRate } from '../dist/src/tune/fit-one-shot.js';
import { simulateTimed } from '../dist/src/tune/timed-call.js';

const files = process.argv.slice(2);
if (files.length === 0) {
  console.error('usage: node bench/fit-default-one-shot.mjs <profile.json> [...]');
  process.exit(2);
}
const call = { collective: 'allReduce', ranks: 2, bytes: 32 * 1024, algorithm: 'one_shot', calls: 201, timeUs: 0 };
console.log('| profile | oneShotUs | its oneShotGBps | 32 KiB call, us | rate on the defaults, GB/s |');
console.log('|---|---:|---:|---:|---:|');
for (const file of files) {
  const tuned = JSON.parse(readFileSync(file, 'utf8'));
  const detection = {
    host: tuned.host,
    cores: tuned.cores,
    machineCores: tuned.cores,
    cpuModel: 'profile',
    numaNodes: [{ id: 0, cpus: Array.from({ length: tuned.cores }, (_, i) => i) }],
    interfaces: [],
  };
  const timeUs = simulateTimed(tuned, detection, call);
  const base = defaultProfile(tuned.cores, tuned.host);
  const fit = fitOneShotRate({ ...base, shm: { ...base.shm, oneShotUs: tuned.shm.oneShotUs } }, detection, {
    ...call,
    timeUs,
  });
  const rate = fit.belowModel ? 'faster than the defaults allow' : fit.gbps.toFixed(2);
  console.log(
    `| ${file} | ${tuned.shm.oneShotUs.toFixed(2)} | ${tuned.shm.oneShotGBps?.toFixed(2) ?? '-'} | ${timeUs.toFixed(2)} | ${rate} |`,
  );
}
