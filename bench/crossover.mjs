#!/usr/bin/env node
// Where two or more algorithms cross over: every candidate of one op and rank count, forced,
// taking turns in interleaved blocks (as bench/regret.mjs runs them) over a finer size sweep
// than the regret grid's factors of 8, to place a size rule of tuner/select.ts between them.
// Usage: node bench/crossover.mjs --op all_reduce --ranks 4 [--procs] --algos tree,recursive_doubling
//        [--from 4096] [--to 262144] [--factor 2] [--blocks 7]
import { median } from '../dist/src/tune/median.js';
import { blockRows } from './lib/blocks.mjs';

const flag = (name, fallback) => {
  const at = process.argv.indexOf(name);
  return at > 0 ? process.argv[at + 1] : fallback;
};
const op = flag('--op', 'all_reduce');
const ranks = Number(flag('--ranks', '4'));
const procs = process.argv.includes('--procs');
const algorithms = flag('--algos', 'tree,recursive_doubling').split(',');
const blocks = Number(flag('--blocks', '7'));
const sizes = {
  minBytes: Number(flag('--from', '4096')),
  maxBytes: Number(flag('--to', '262144')),
  stepFactor: Number(flag('--factor', '2')),
  stepBytes: 1,
};
const rows = await blockRows({
  op,
  ranks,
  procs,
  candidates: algorithms.map((algorithm) => ({ algorithm })),
  blocks,
  ranges: [sizes],
});
console.log(
  `# ${op}, ${ranks} ${procs ? 'process' : 'thread'} ranks, medians of ${blocks} interleaved blocks (us), ${new Date().toISOString()}`,
);
console.log(`| bytes | ${algorithms.join(' | ')} | fastest |\n|---:|${algorithms.map(() => '---:|').join('')}---|`);
for (const { bytes, blockTimes } of rows) {
  const times = blockTimes.map((t) => (t === null ? Infinity : median(t)));
  const best = times.indexOf(Math.min(...times));
  console.log(
    `| ${bytes} | ${times.map((t) => (Number.isFinite(t) ? t.toFixed(0) : '-')).join(' | ')} | ${algorithms[best]} |`,
  );
}
