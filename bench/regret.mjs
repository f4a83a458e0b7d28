#!/usr/bin/env node
// Regret of the tuner: for each op, rank count and size, time every valid algorithm in one run
// (alternating, best of --rounds), and report regret = time(the algorithm the tuner picks) /
// time(best algorithm). The tuner is deterministic, so its choice's own measurement is the
// tuner's time; a collective with one algorithm has regret 1 by construction and is listed for
// completeness. Usage: node bench/regret.mjs [--procs] [--rounds 3]
import { BENCH_OPS } from '../dist/src/bench/bench-ops.js';
import { runBench } from '../dist/src/bench/run-bench.js';
import { algorithmNames } from '../dist/src/algorithms/registry.js';
import { selectAlgorithm } from '../dist/src/tuner/select.js';

const procs = process.argv.includes('--procs');
const roundsAt = process.argv.indexOf('--rounds');
const rounds = roundsAt > 0 ? Number(process.argv[roundsAt + 1]) : 3;
const sweep = { minBytes: 8, maxBytes: 64 * 1024 * 1024, stepFactor: 8, stepBytes: 1 };
const bench = (op, ranks, algorithm) => runBench({ op, ranks, ...sweep, iters: 20, warmupIters: 5, check: false, dtype: 'float32', redop: 'sum', root: 0, timeoutMs: 600_000, procs, ...(algorithm ? { algorithm } : {}) });
console.log(`# regret = time(tuner's choice) / time(best algorithm), ${procs ? 'process ranks over TCP' : 'thread ranks over shared memory'}, best of ${rounds} alternating rounds`);
console.log('| op | ranks | bytes | choice | best | regret | times us (per algorithm) |\n|---|---:|---:|---|---|---:|---|');
const regrets = [];
for (const ranks of procs ? [2, 4] : [2, 4, 8]) {
  for (const op of ['all_reduce', 'all_gather', 'reduce_scatter', 'broadcast']) {
    // Hierarchical algorithms need several hosts; on one machine they only add a relay.
    const algorithms = algorithmNames(BENCH_OPS[op].collective).filter((a) => a !== 'hierarchical');
    const best = new Map();
    for (let round = 0; round < rounds; round++) {
      for (const algorithm of algorithms) {
        for (const row of (await bench(op, ranks, algorithm)).filter((r) => !r.inPlace)) {
          const key = `${row.bytes}|${algorithm}`;
          best.set(key, Math.min(best.get(key) ?? Infinity, row.timeUs));
        }
      }
    }
    const sizes = [...new Set([...best.keys()].map((k) => Number(k.split('|')[0])))].filter((b) => b > 0);
    for (const bytes of sizes) {
      const times = Object.fromEntries(algorithms.map((a) => [a, best.get(`${bytes}|${a}`)]));
      const [bestAlgorithm, bestTime] = Object.entries(times).sort((a, b) => a[1] - b[1])[0];
      const choice = selectAlgorithm({ collective: BENCH_OPS[op].collective, nranks: ranks, bytes, elementBytes: 4 }).algorithm;
      const regret = best.get(`${bytes}|${choice}`) / bestTime;
      regrets.push(regret);
      console.log(`| ${op} | ${ranks} | ${bytes} | ${choice} | ${bestAlgorithm} | ${regret.toFixed(2)} | ${Object.entries(times).map(([a, t]) => `${a} ${t.toFixed(0)}`).join(', ')} |`);
    }
  }
}
regrets.sort((a, b) => a - b);
console.log(`\n# median regret ${regrets[regrets.length >> 1].toFixed(2)}, worst ${regrets[regrets.length - 1].toFixed(2)} over ${regrets.length} rows (targets: median <= 1.10, worst <= 1.3)`);
