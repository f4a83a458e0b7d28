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
import { runBench } from '../dist/src/bench/run-bench.js';
import { ONE_SHOT } from '../dist/src/exec/one-shot.js';
import { selectableAlgorithms } from '../dist/src/tuner/select.js';

const flag = (name, fallback) => { const at = process.argv.indexOf(name); return at > 0 ? process.argv[at + 1] : fallback; };
const procs = process.argv.includes('--procs');
const rounds = Number(flag('--rounds', '3'));
const rankCounts = flag('--ranks', procs ? '2,4' : '2,4,8').split(',').map(Number);
const ops = flag('--ops', 'all_reduce,all_gather,reduce_scatter,broadcast').split(',');
const sweep = { minBytes: 8, maxBytes: 64 * 1024 * 1024, stepFactor: 8, stepBytes: 1 };
/** One-shot messages must fit a low-latency slot; 32 KiB fits every op here on up to 8 ranks. */
const ONE_SHOT_MAX_BYTES = 32 * 1024;
const TUNER = 'tuner';

/**
 * Small TCP messages between fresh processes take a few hundred calls to settle (a 2-process
 * ring of 8 pieces: 1.2 ms per call after 20 warm-up calls, 0.45 ms after 500; a bare Node
 * exchange settles as slowly), so process ranks warm up long on sizes up to this, in a launch of
 * their own, and briefly on the larger ones, where that many calls would take minutes.
 */
const SETTLE_MAX_BYTES = 256 * 1024;
const SETTLE_WARMUP = 300;
const bench = async (op, ranks, algorithm) => {
  const maxBytes = algorithm === ONE_SHOT ? ONE_SHOT_MAX_BYTES : sweep.maxBytes;
  const run = (minBytes, top, warmupIters) => runBench({
    op, ranks, ...sweep, minBytes, maxBytes: top, iters: 20, warmupIters, check: false, dtype: 'float32', redop: 'sum', root: 0,
    timeoutMs: 600_000, procs, ...(algorithm === TUNER ? {} : { algorithm }),
  });
  if (!procs) return run(sweep.minBytes, maxBytes, 5);
  // The sweep's sizes are minBytes x stepFactor^k: the first above SETTLE_MAX_BYTES starts the second launch.
  let split = sweep.minBytes;
  while (split <= SETTLE_MAX_BYTES) split *= sweep.stepFactor;
  return [...await run(sweep.minBytes, split / sweep.stepFactor, SETTLE_WARMUP), ...await run(split, maxBytes, 5)];
};

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
