#!/usr/bin/env node
// Regret of the tuner: for each op, rank count and size, time every valid algorithm forced, and
// the tuner left to choose, in one run (alternating, best of --rounds), and report
// regret = time(the tuner's choice) / time(the fastest algorithm). The choice is what the
// tuner's calls recorded (bench rows carry it); its time is the best of the tuner's runs and the
// runs that forced the same algorithm, which are the same configuration measured twice (a 20-call
// mean on this 2-core VM absorbs 0.1-10 ms stalls whole, so one sample of either can be several
// times the other). The one-shot path is a contender on thread ranks up to the low-latency slot
// size. Usage: node bench/regret.mjs [--procs] [--rounds 3] [--ranks 2,4] [--ops all_reduce,...]
import { BENCH_OPS } from '../dist/src/bench/bench-ops.js';
import { ONE_SHOT } from '../dist/src/exec/one-shot.js';
import { selectableAlgorithms } from '../dist/src/tuner/select.js';
import { sweepRows } from './lib/sweep.mjs';

const flag = (name, fallback) => { const at = process.argv.indexOf(name); return at > 0 ? process.argv[at + 1] : fallback; };
const procs = process.argv.includes('--procs');
const rounds = Number(flag('--rounds', '3'));
const rankCounts = flag('--ranks', procs ? '2,4' : '2,4,8').split(',').map(Number);
const ops = flag('--ops', 'all_reduce,all_gather,reduce_scatter,broadcast').split(',');
/** One-shot messages must fit a low-latency slot; 32 KiB fits every op here on up to 8 ranks. */
const ONE_SHOT_MAX_BYTES = 32 * 1024;
const TUNER = 'tuner';
const bench = (op, ranks, algorithm) => sweepRows({
  op, ranks, procs, ...(algorithm === TUNER ? {} : { algorithm }), ...(algorithm === ONE_SHOT ? { maxBytes: ONE_SHOT_MAX_BYTES } : {}),
});

console.log(`# regret = time(tuner's run) / time(fastest run), ${procs ? 'process ranks over TCP' : 'thread ranks over shared memory'}, best of ${rounds} alternating rounds, ${new Date().toISOString()}`);
console.log('| op | ranks | bytes | tuner chose | fastest | regret | times us (tuner\'s own runs, then per algorithm forced) |\n|---|---:|---:|---|---|---:|---|');
const regrets = [];
for (const ranks of rankCounts) {
  for (const op of ops) {
    // Hierarchical algorithms need several hosts; on one machine they only add a relay.
    const algorithms = selectableAlgorithms(BENCH_OPS[op].collective).filter((a) => a !== 'hierarchical' && !(procs && a === ONE_SHOT));
    const best = new Map();
    const chosen = new Map();
    for (let round = 0; round < rounds; round++) {
      for (const algorithm of [TUNER, ...algorithms]) {
        for (const row of (await bench(op, ranks, algorithm)).filter((r) => !r.inPlace)) {
          const key = `${row.bytes}|${algorithm}`;
          best.set(key, Math.min(best.get(key) ?? Infinity, row.timeUs));
          if (algorithm === TUNER) chosen.set(row.bytes, row.algorithm);
        }
      }
    }
    for (const bytes of [...chosen.keys()].filter((b) => b > 0)) {
      const times = Object.fromEntries([TUNER, ...algorithms].filter((a) => best.has(`${bytes}|${a}`)).map((a) => [a, best.get(`${bytes}|${a}`)]));
      const choice = chosen.get(bytes);
      const choiceTime = Math.min(times[TUNER], times[choice] ?? Infinity);
      const [fastest, fastestTime] = Object.entries(times).filter(([a]) => a !== TUNER).sort((a, b) => a[1] - b[1])[0];
      const regret = choiceTime / Math.min(fastestTime, choiceTime);
      regrets.push(regret);
      console.log(`| ${op} | ${ranks} | ${bytes} | ${choice} | ${fastest} | ${regret.toFixed(2)} | ${Object.entries(times).map(([a, t]) => `${a} ${t.toFixed(0)}`).join(', ')} |`);
    }
  }
}
regrets.sort((a, b) => a - b);
console.log(`\n# median regret ${regrets[regrets.length >> 1].toFixed(2)}, worst ${regrets[regrets.length - 1].toFixed(2)} over ${regrets.length} rows (targets: median <= 1.10, worst <= 1.3)`);
