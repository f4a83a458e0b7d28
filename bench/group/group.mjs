#!/usr/bin/env node
// Grouped calls: 200 all-reduces of 4-64 KiB tensors (a model's gradients, 5.6 MiB in all)
// awaited one by one, issued all at once, and issued as one group (comm.group: fused into
// buckets), on 2 and 4 thread ranks and 2 and 4 process ranks over loopback TCP, in one run.
// Rank 0's median of 5 rounds, ms.
// Usage: node bench/group/group.mjs [--tensors 200] [--rounds 5]
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { launch } from '../../dist/src/launch/launch.js';
import { run } from '../../dist/src/launch/run.js';

const { values } = parseArgs({
  options: { tensors: { type: 'string', default: '200' }, rounds: { type: 'string', default: '5' } },
});
const script = fileURLToPath(new URL('./group-rank.mjs', import.meta.url));
const args = [JSON.stringify({ tensors: Number(values.tensors), rounds: Number(values.rounds) })];
console.log(
  `# ${values.tensors} all-reduces of 4-64 KiB, rank 0's median of ${values.rounds} rounds, ms; ${new Date().toISOString()}`,
);
console.log(
  '| ranks | awaited one by one | issued together | group | one by one / group | together / group |\n|---|---:|---:|---:|---:|---:|',
);
for (const [label, start] of [
  ['2 thread ranks', (a) => run({ ranks: 2, script, args: a, output: 'silent', timeoutMs: 600_000 })],
  ['4 thread ranks', (a) => run({ ranks: 4, script, args: a, output: 'silent', timeoutMs: 600_000 })],
  [
    '2 process ranks, TCP',
    (a) => launch({ nprocPerNode: 2, mode: 'processes', script, args: a, output: 'silent', timeoutMs: 600_000 }),
  ],
  [
    '4 process ranks, TCP',
    (a) => launch({ nprocPerNode: 4, mode: 'processes', script, args: a, output: 'silent', timeoutMs: 600_000 }),
  ],
]) {
  const { results } = await start(args);
  const r = results[0];
  console.log(
    `| ${label} | ${r.awaitedEach.toFixed(1)} | ${r.issuedTogether.toFixed(1)} | ${r.group.toFixed(1)} | ${(r.awaitedEach / r.group).toFixed(2)} | ${(r.issuedTogether / r.group).toFixed(2)} |`,
  );
}
