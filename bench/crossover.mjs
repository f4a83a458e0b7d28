#!/usr/bin/env node
// Where two or more algorithms cross over: every candidate of one op and rank count, forced,
// taking turns in interleaved blocks (as bench/regret.mjs runs them) over a finer size sweep
// than the regret grid's factors of 8, to place a size rule of tuner/select.ts between them.
// Usage: node bench/crossover.mjs --op all_reduce --ranks 4 [--procs] --algos tree,recursive_doubling
//        [--from 4096] [--to 262144] [--factor 2] [--blocks 7]
import { fileURLToPath } from 'node:url';
import { blockMeansOverRanks } from '../dist/src/bench/time-in-blocks.js';
import { launch } from '../dist/src/launch/launch.js';
import { SMALL_CALL_WARMUP } from '../dist/src/bench/warm-up.js';
import { median } from '../dist/src/tuner/median.js';
import { SWEEP_ITERS } from './lib/sweep.mjs';

const flag = (name, fallback) => { const at = process.argv.indexOf(name); return at > 0 ? process.argv[at + 1] : fallback; };
const op = flag('--op', 'all_reduce');
const ranks = Number(flag('--ranks', '4'));
const procs = process.argv.includes('--procs');
const algorithms = flag('--algos', 'tree,recursive_doubling').split(',');
const blocks = Number(flag('--blocks', '7'));
const options = {
  op, ranks, minBytes: Number(flag('--from', '4096')), maxBytes: Number(flag('--to', '262144')), stepFactor: Number(flag('--factor', '2')), stepBytes: 1,
  iters: SWEEP_ITERS, warmupIters: 0, check: false, dtype: 'float32', redop: 'sum', root: 0, timeoutMs: 900_000, procs,
};
const candidates = algorithms.map((algorithm) => ({ algorithm }));
const warmup = { calls: 5, smallCalls: SMALL_CALL_WARMUP, settleMs: 2000 };
const { results } = await launch({
  nprocPerNode: ranks, mode: procs ? 'processes' : 'threads', script: fileURLToPath(new URL('./lib/interleaved-rank.mjs', import.meta.url)),
  args: [JSON.stringify({ options, candidates, blocks, warmup })], output: 'prefix', timeoutMs: options.timeoutMs,
});
console.log(`# ${op}, ${ranks} ${procs ? 'process' : 'thread'} ranks, medians of ${blocks} interleaved blocks (us), ${new Date().toISOString()}`);
console.log(`| bytes | ${algorithms.join(' | ')} | fastest |\n|---:|${algorithms.map(() => '---:|').join('')}---|`);
results[0].forEach(({ bytes }, s) => {
  const times = candidates.map((_, c) => { const t = blockMeansOverRanks(results.map((rank) => rank[s].times), c); return t === null ? Infinity : median(t); });
  const best = times.indexOf(Math.min(...times));
  console.log(`| ${bytes} | ${times.map((t) => (Number.isFinite(t) ? t.toFixed(0) : '-')).join(' | ')} | ${algorithms[best]} |`);
});
