#!/usr/bin/env node
// What the progress engine costs a call: back-to-back all-reduces of 8 B-1 MiB, inline, on the
// engine and under progress 'auto', 2 thread ranks, 2 process ranks over loopback TCP, and
// 2 processes of 2 thread ranks each (shared memory inside, TCP between), in one run. Each figure is
// the median of 5 rounds of rank 0's time per call.
// Then what staging a plain array costs a call on the engine, against an array from comm.alloc.
// Usage: node bench/overlap/call-cost.mjs [--calls 500] [--only <text in a row's label>]
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { launch } from '../../dist/src/launch/launch.js';
import { run } from '../../dist/src/launch/run.js';

const { values } = parseArgs({
  options: { calls: { type: 'string', default: '500' }, only: { type: 'string' } },
});
const calls = Number(values.calls);
const script = fileURLToPath(new URL('./call-cost-rank.mjs', import.meta.url));
console.log(`# all-reduce, us per call (median of 5 rounds of ${calls}); ${new Date().toISOString()}`);
console.log(
  "| ranks | bytes | inline | engine | engine / inline | 'auto' | 'auto' / inline | 'auto' ran it |\n|---|---:|---:|---:|---:|---:|---:|---|",
);
for (const [label, start, sizes] of [
  [
    '2 thread ranks',
    (args) => run({ ranks: 2, script, args, output: 'silent', timeoutMs: 600_000 }),
    [8, 4096, 65536, 1 << 20],
  ],
  [
    '2 process ranks, TCP',
    (args) => launch({ nprocPerNode: 2, mode: 'processes', script, args, output: 'silent', timeoutMs: 600_000 }),
    [8, 65536, 1 << 20],
  ],
  [
    '2 processes x 2 thread ranks',
    (args) =>
      launch({
        nprocPerNode: 2,
        mode: 'processes',
        threadsPerProc: 2,
        script,
        args,
        output: 'silent',
        timeoutMs: 600_000,
      }),
    [8, 65536, 1 << 20],
  ],
].filter(([label]) => values.only === undefined || label.includes(values.only)))
  for (const bytes of sizes) {
    const us = {};
    let auto;
    for (const progress of ['inline', 'engine', 'auto']) {
      const { results } = await start([JSON.stringify({ progress, bytes, calls: bytes > 65536 ? calls / 5 : calls })]);
      us[progress] = results[0].us;
      if (progress === 'auto') auto = results[0];
    }
    const autoCells = `| ${us.auto.toFixed(1)} | ${(us.auto / us.inline).toFixed(2)} | ${auto.path} (hand-off ${auto.handOffUs.toFixed(0)} us) |`;
    console.log(
      `| ${label} | ${bytes} | ${us.inline.toFixed(1)} | ${us.engine.toFixed(1)} | ${(us.engine / us.inline).toFixed(2)} ${autoCells}`,
    );
  }

// What staging costs on the engine: the same calls on a plain array (copied into the arena at issue
// and back at completion) against an array from comm.alloc (read in place).
const stagingSizes = values.only === undefined ? [64 * 1024, 1 << 20, 16 << 20] : [];
if (stagingSizes.length > 0)
  console.log(
    '\n| ranks | bytes | engine, comm.alloc | engine, plain array | plain / alloc |\n|---|---:|---:|---:|---:|',
  );
for (const bytes of stagingSizes) {
  const us = {};
  for (const memory of ['alloc', 'plain']) {
    const args = [JSON.stringify({ progress: 'engine', bytes, calls: bytes > 65536 ? 50 : calls, memory })];
    const { results } = await run({ ranks: 2, script, args, output: 'silent', timeoutMs: 600_000 });
    us[memory] = results[0].us;
  }
  console.log(
    `| 2 thread ranks | ${bytes} | ${us.alloc.toFixed(1)} | ${us.plain.toFixed(1)} | ${(us.plain / us.alloc).toFixed(2)} |`,
  );
}
