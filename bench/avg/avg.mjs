#!/usr/bin/env node
// The cost of op 'avg' over 'sum' (its dividing pass over the result), this build beside another,
// the builds taking turns: 2 thread ranks and 2 processes over loopback TCP, float32 arrays from
// comm.alloc and plain ones. Medians of --calls calls (a barrier before each), median over rounds.
// Usage: node bench/avg/avg.mjs --baseline DIR [--elements 3188224] [--calls 15] [--rounds 3]
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { launch } from '../../dist/src/launch/launch.js';
import { run } from '../../dist/src/launch/run.js';

const { values } = parseArgs({
  options: {
    baseline: { type: 'string' },
    elements: { type: 'string', default: '3188224' },
    calls: { type: 'string', default: '15' },
    rounds: { type: 'string', default: '3' },
  },
});
const here = fileURLToPath(new URL('../..', import.meta.url)).replace(/\/$/, '');
const builds = [['this build', here], ...(values.baseline ? [['baseline', values.baseline]] : [])];
const script = fileURLToPath(new URL('./avg-rank.mjs', import.meta.url));
const median = (xs) => [...xs].sort((a, b) => a - b)[xs.length >> 1];
const elements = Number(values.elements);
console.log(
  `# all-reduce of ${elements} float32 (${((elements * 4) / 2 ** 20).toFixed(2)} MiB), 2 ranks; ${new Date().toISOString()}`,
);
console.log('| ranks | array | build | sum (ms) | avg (ms) | avg - sum (ms) |\n|---|---|---|---:|---:|---:|');
for (const procs of [false, true]) {
  const rows = new Map();
  for (let round = 0; round < Number(values.rounds); round++) {
    for (const [name, root] of builds) {
      const args = [JSON.stringify({ root, elements, calls: Number(values.calls) })];
      const { results } = procs
        ? await launch({ nprocPerNode: 2, mode: 'processes', script, args, output: 'silent', timeoutMs: 600_000 })
        : await run({ ranks: 2, script, args, output: 'silent', timeoutMs: 600_000 });
      for (const [key, ms] of Object.entries(results[0])) {
        const k = `${name}|${key}`;
        rows.set(k, [...(rows.get(k) ?? []), Math.max(ms, results[1][key])]);
      }
    }
  }
  for (const kind of ['arena', 'plain'])
    for (const [name] of builds) {
      const sum = median(rows.get(`${name}|${kind} sum`));
      const avg = median(rows.get(`${name}|${kind} avg`));
      console.log(
        `| ${procs ? '2 processes, TCP' : '2 thread ranks'} | ${kind === 'arena' ? 'comm.alloc' : 'plain'} | ${name} | ${sum.toFixed(2)} | ${avg.toFixed(2)} | ${(avg - sum).toFixed(2)} |`,
      );
    }
}
