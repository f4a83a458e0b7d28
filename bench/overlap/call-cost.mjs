#!/usr/bin/env node
// What the progress engine costs a call: back-to-back all-reduces of 8 B-1 MiB, inline and on
// the engine, 2 thread ranks and 2 process ranks over loopback TCP, in one run. Each figure is
// the median of 5 rounds of rank 0's time per call.
// Usage: node bench/overlap/call-cost.mjs [--calls 500]
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { launch } from '../../dist/src/launch/launch.js';
import { run } from '../../dist/src/launch/run.js';

const { values } = parseArgs({ options: { calls: { type: 'string', default: '500' } } });
const calls = Number(values.calls);
const script = fileURLToPath(new URL('./call-cost-rank.mjs', import.meta.url));
console.log(`# all-reduce, us per call (median of 5 rounds of ${calls}); ${new Date().toISOString()}`);
console.log('| ranks | bytes | inline | engine | engine / inline |\n|---|---:|---:|---:|---:|');
for (const [label, start] of [
  ['2 thread ranks', (args) => run({ ranks: 2, script, args, output: 'silent', timeoutMs: 600_000 })],
  [
    '2 process ranks, TCP',
    (args) => launch({ nprocPerNode: 2, mode: 'processes', script, args, output: 'silent', timeoutMs: 600_000 }),
  ],
])
  for (const bytes of [8, 64 * 1024, 1 << 20]) {
    const us = {};
    for (const progress of ['inline', 'engine']) {
      const { results } = await start([JSON.stringify({ progress, bytes, calls: bytes > 65536 ? calls / 5 : calls })]);
      us[progress] = results[0].us;
    }
    console.log(
      `| ${label} | ${bytes} | ${us.inline.toFixed(1)} | ${us.engine.toFixed(1)} | ${(us.engine / us.inline).toFixed(2)} |`,
    );
  }
