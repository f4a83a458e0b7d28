#!/usr/bin/env node
// Where fusing a group's all-reduces stops paying: for each tensor size, `count` all-reduces of
// arrays from comm.alloc issued together (one call each) against the same as one comm.group
// (fused into buckets: copied into one arena buffer, reduced once, copied back), on 2 and 4
// thread ranks and 2 process ranks over loopback TCP. together / group above 1: fusing wins.
// Rank 0's median of the rounds, ms.
// Usage: node bench/group/fusion.mjs [--sizes 16384,65536,...] [--total-mib 32] [--max-count 200] [--rounds 5]
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { launch } from '../../dist/src/launch/launch.js';
import { run } from '../../dist/src/launch/run.js';

const { values } = parseArgs({
  options: {
    sizes: { type: 'string', default: '16384,65536,262144,1048576,2097152,4194304,8388608' },
    'total-mib': { type: 'string', default: '32' },
    'max-count': { type: 'string', default: '200' },
    rounds: { type: 'string', default: '5' },
    only: { type: 'string' },
  },
});
const script = fileURLToPath(new URL('./fusion-rank.mjs', import.meta.url));
const args = [
  JSON.stringify({
    sizes: values.sizes.split(',').map(Number),
    totalBytes: Number(values['total-mib']) * 2 ** 20,
    maxCount: Number(values['max-count']),
    rounds: Number(values.rounds),
  }),
];
console.log(`# rank 0's median of ${values.rounds} rounds, ms; ${new Date().toISOString()}`);
console.log(
  '| ranks | tensor bytes | tensors | issued together | group (fused) | together / group |\n|---|---:|---:|---:|---:|---:|',
);
const starts = {
  'threads-2': ['2 thread ranks', (a) => run({ ranks: 2, script, args: a, output: 'silent', timeoutMs: 900_000 })],
  'threads-4': ['4 thread ranks', (a) => run({ ranks: 4, script, args: a, output: 'silent', timeoutMs: 900_000 })],
  'tcp-2': [
    '2 process ranks, TCP',
    (a) => launch({ nprocPerNode: 2, mode: 'processes', script, args: a, output: 'silent', timeoutMs: 900_000 }),
  ],
};
for (const [key, [label, start]] of Object.entries(starts)) {
  if (values.only && !values.only.split(',').includes(key)) continue;
  const { results } = await start(args);
  for (const r of results[0]) {
    console.log(
      `| ${label} | ${r.bytes} | ${r.count} | ${r.together.toFixed(2)} | ${r.group.toFixed(2)} | ${(r.together / r.group).toFixed(2)} |`,
    );
  }
}
