#!/usr/bin/env node
// Regret of the tuner: for each op, rank count and size, time every valid algorithm forced and
// the tuner left to choose, and report regret = time(the tuner's choice) / time(the fastest).
// All candidates of one op and rank count run in one job, taking turns in blocks of back-to-back
// calls (bench/lib/interleaved-rank.mjs); an algorithm's time is the median over blocks of the
// block's mean over ranks, the chosen algorithm's over the blocks of the tuner's own calls and of
// the algorithm forced, the same configuration measured twice. The one-shot path is a
// contender wherever the call fits its low-latency message. Sizes as the prediction check's
// sweep (bench/lib/sweep.mjs), small ones warmed up as long as it warms them (bench/lib/blocks.mjs),
// and every candidate paces its blocks by its warm-up's last calls.
// --confirm: every row over 1.3 is timed again in a job of its own (the choice and the fastest
// only, twice the blocks), to tell a wrong choice from a noisy row.
// Usage: node bench/regret.mjs [--procs] [--blocks 5] [--ranks 2,4] [--ops all_reduce,...] [--min-bytes N] [--confirm]
import { BENCH_OPS } from '../dist/src/algorithms/bench-ops.js';
import { selectableAlgorithms } from '../dist/src/tuner/select.js';
import { BLOCK_MIN_MS } from '../dist/src/bench/time-in-blocks.js';
import { blockRows } from './lib/blocks.mjs';
import { SWEEP_ITERS, SWEEP_RANGES } from './lib/sweep.mjs';
import { median } from '../dist/src/tune/median.js';

const flag = (name, fallback) => {
  const at = process.argv.indexOf(name);
  return at > 0 ? process.argv[at + 1] : fallback;
};
const procs = process.argv.includes('--procs');
const blocks = Number(flag('--blocks', '5'));
const rankCounts = flag('--ranks', procs ? '2,4' : '2,4,8')
  .split(',')
  .map(Number);
const ops = flag('--ops', 'all_reduce,all_gather,reduce_scatter,broadcast').split(',');
// A part of the grid: its sizes from --min-bytes up.
const minBytes = Number(flag('--min-bytes', '0'));
const confirm = process.argv.includes('--confirm');
/** The issue's bound on the worst regret: rows above it are the ones --confirm times again. */
const WORST_BOUND = 1.3;
const ranges = SWEEP_RANGES.filter((r) => r.maxBytes >= minBytes).map((r) => ({
  ...r,
  minBytes: Math.max(r.minBytes, minBytes),
}));

console.log(
  `# regret = time(tuner's choice) / time(fastest), ${procs ? 'process ranks over TCP' : 'thread ranks over shared memory'}, medians of ${blocks} interleaved blocks of at least ${SWEEP_ITERS} calls and ${BLOCK_MIN_MS} ms, ${new Date().toISOString()}`,
);
console.log(
  '| op | ranks | bytes | fewest calls per block | tuner chose | fastest | regret | median us per algorithm |\n|---|---:|---:|---:|---|---|---:|---|',
);
const rows = [];
for (const ranks of rankCounts) {
  for (const op of ops) {
    // Hierarchical algorithms need several hosts; on one machine they only add a relay.
    const algorithms = selectableAlgorithms(BENCH_OPS[op].collective).filter((a) => a !== 'hierarchical');
    const candidates = [{}, ...algorithms.map((algorithm) => ({ algorithm }))];
    for (const { bytes, chosen, callsPerBlock, blockTimes } of await blockRows({
      op,
      ranks,
      procs,
      candidates,
      blocks,
      ranges,
    })) {
      if (bytes === 0) continue;
      // Each algorithm's median block; the chosen one's over its forced and the tuner's blocks.
      const times = Object.fromEntries(
        algorithms
          .map((a, i) => [a, blockTimes[i + 1]])
          .filter(([, t]) => t !== null)
          .map(([a, t]) => [a, median(a === chosen ? [...t, ...blockTimes[0]] : t)]),
      );
      const [fastest, fastestTime] = Object.entries(times).sort((a, b) => a[1] - b[1])[0];
      const regret = times[chosen] / fastestTime;
      rows.push({ op, ranks, bytes, chosen, fastest, regret });
      console.log(
        `| ${op} | ${ranks} | ${bytes} | ${callsPerBlock} | ${chosen} | ${fastest} | ${regret.toFixed(2)} | ${Object.entries(
          times,
        )
          .map(([a, t]) => `${a} ${t.toFixed(0)}`)
          .join(', ')} |`,
      );
    }
  }
}
const regrets = rows.map((row) => row.regret).sort((a, b) => a - b);
console.log(
  `\n# median regret ${regrets[regrets.length >> 1].toFixed(2)}, worst ${regrets[regrets.length - 1].toFixed(2)} over ${regrets.length} rows (targets: median <= 1.10, worst <= ${WORST_BOUND})`,
);
if (confirm) await confirmRows(rows.filter((row) => row.regret > WORST_BOUND));

/**
 * Times each row again in a launch of its own: the tuner left to choose, its choice forced and
 * the grid's fastest, taking turns, twice the blocks. Regret again = the choice's median (its
 * forced and its own blocks) over the better of the two. Only rows that came out high get this
 * second chance, so it tells noise from a wrong rule; it is not the grid's worst.
 */
async function confirmRows(high) {
  console.log(
    `\n# rows over ${WORST_BOUND} timed again, each in a job of its own, ${2 * blocks} blocks, ${new Date().toISOString()}`,
  );
  if (high.length === 0) {
    console.log('# none');
    return;
  }
  // Not the grid's columns: bench/lib/regret-rows.mjs reads saved grids, and must not take these for rows.
  console.log(
    '| row | tuner chose | grid fastest | grid regret | regret again | median us again (choice, fastest) |\n|---|---|---|---:|---:|---|',
  );
  for (const row of high) {
    const candidates = [{}, { algorithm: row.chosen }, { algorithm: row.fastest }];
    const [again] = await blockRows({
      op: row.op,
      ranks: row.ranks,
      procs,
      candidates,
      blocks: 2 * blocks,
      ranges: [{ minBytes: row.bytes, maxBytes: row.bytes, stepFactor: 2, stepBytes: 1 }],
    });
    const chosenUs = median([...(again.blockTimes[0] ?? []), ...(again.blockTimes[1] ?? [])]);
    const fastestUs = median(again.blockTimes[2]);
    const note = again.chosen === row.chosen ? '' : ` (the tuner chose ${again.chosen} this time)`;
    console.log(
      `| ${row.op}, ${row.ranks} ranks, ${row.bytes} B | ${row.chosen} | ${row.fastest} | ${row.regret.toFixed(2)} | ${(chosenUs / Math.min(chosenUs, fastestUs)).toFixed(2)}${note} | ${chosenUs.toFixed(0)}, ${fastestUs.toFixed(0)} |`,
    );
  }
}
