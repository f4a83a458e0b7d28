#!/usr/bin/env node
// Compute-communication overlap: each rank issues a 64 MiB all-reduce, computes for about as
// long as the all-reduce takes alone, then awaits it. Reports step / max(compute alone,
// all-reduce alone) per configuration, inline, with the progress engine, and with progress
// 'auto' (1.0: fully hidden; 2.0: nothing hidden). Configurations: 2 and 4 thread ranks, 2 process ranks over loopback TCP,
// and 2 hosts x 1 process over network namespaces with the link shaped to 1 Gbit/s (needs root
// and iproute2; skipped with the reason otherwise).
// Usage: node bench/overlap/overlap.mjs [--mib 64] [--reps 3] [--only threads|tcp|netns]
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { launch } from '../../dist/src/launch/launch.js';
import { run } from '../../dist/src/launch/run.js';
import { createNetnsStar, netnsUnavailable } from '../../dist/test/harness/netns.js';
import { netnsJob } from '../lib/netns-job.mjs';

const { values } = parseArgs({
  options: { mib: { type: 'string', default: '64' }, reps: { type: 'string', default: '3' }, only: { type: 'string' } },
});
const mib = Number(values.mib);
const reps = Number(values.reps);
const script = fileURLToPath(new URL('./overlap-rank.mjs', import.meta.url));

/** The slowest rank's figures: a step ends when every rank's has. */
function slowest(results) {
  const max = (key) => Math.max(...results.map((r) => r[key]));
  return {
    allReduceMs: max('allReduceMs'),
    computeMs: max('computeMs'),
    stepMs: max('stepMs'),
    computeInStepMs: max('computeInStepMs'),
  };
}

function row(config, progress, r) {
  const ratio = r.stepMs / Math.max(r.allReduceMs, r.computeMs);
  console.log(
    `| ${config} | ${progress} | ${r.allReduceMs.toFixed(0)} | ${r.computeMs.toFixed(0)} | ${r.stepMs.toFixed(0)} | ${ratio.toFixed(2)} | ${r.computeInStepMs.toFixed(0)} |`,
  );
}

console.log(`# ${mib} MiB all-reduce, median of ${reps}; ms; ${new Date().toISOString()}`);
console.log(
  '| configuration | progress | all-reduce alone | compute alone | step | step / max | compute within the step |\n|---|---|---:|---:|---:|---:|---:|',
);
for (const progress of ['inline', 'engine', 'auto']) {
  const jobArgs = [JSON.stringify({ progress, mib, reps })];
  if (!values.only || values.only === 'threads')
    for (const ranks of [2, 4]) {
      const { results } = await run({ ranks, script, args: jobArgs, output: 'silent', timeoutMs: 600_000 });
      row(`${ranks} thread ranks`, progress, slowest(results));
    }
  if (!values.only || values.only === 'tcp') {
    const { results } = await launch({
      nprocPerNode: 2,
      mode: 'processes',
      script,
      args: jobArgs,
      output: 'silent',
      timeoutMs: 600_000,
    });
    row('2 process ranks, loopback TCP', progress, slowest(results));
  }
}
if (!values.only || values.only === 'netns') {
  const why = netnsUnavailable();
  if (why) console.log(`\n# 2 hosts x 1 process over namespaces skipped: ${why}`);
  else {
    const star = createNetnsStar('ov', 2, '1gbit');
    try {
      let port = 29850;
      for (const progress of ['inline', 'engine', 'auto'])
        row(
          '2 hosts x 1 process, veth 1 Gbit/s',
          progress,
          slowest(
            await netnsJob(star, {
              script,
              args: [JSON.stringify({ progress, mib, reps })],
              port: port++,
              token: 'overlap-netns',
            }),
          ),
        );
    } finally {
      star.close();
    }
  }
}
