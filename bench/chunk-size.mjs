#!/usr/bin/env node
// Pipelining piece size between thread ranks, side by side: `tsccl bench` (out-of-place and
// in-place rows, 20 timed calls each) with TSCCL_CHUNK_BYTES set to each value in turn,
// alternating the values within every round, each (op, size, algorithm) as its own launch.
// Prints per op, size and algorithm the median of the rounds for every piece size, and its
// ratio to the first piece size given. Ranks read the piece size when they start, hence a
// launch per value, each given its own environment.
// Usage: node bench/chunk-size.mjs [--ranks 2] [--ops all_reduce,...] [--bytes 2M,16M,64M]
//   [--chunks 512K,4M] [--algos tuner|ring,direct,...] [--rounds 3]
import { parseSize } from '../dist/src/algorithms/bench-ops.js';
import { runBench } from '../dist/src/bench/run-bench.js';
import { median } from '../dist/src/tune/median.js';

const argv = process.argv.slice(2);
const flag = (name, fallback) => {
  const i = argv.indexOf(name);
  return i < 0 ? fallback : argv[i + 1];
};
const list = (name, fallback) => flag(name, fallback).split(',');
const ranks = Number(flag('--ranks', '2'));
const ops = list('--ops', 'all_reduce,all_gather,reduce_scatter,broadcast');
const sizes = list('--bytes', '2M,16M,64M');
const chunks = list('--chunks', '512K,4M');
const algos = list('--algos', 'tuner');
const rounds = Number(flag('--rounds', '3'));

/** One launch: the out-of-place and in-place times of one size, and the algorithm the calls recorded. */
async function measure(op, size, chunk, algo) {
  const bytes = parseSize(size, '--bytes');
  const rows = await runBench(
    {
      op,
      ranks,
      minBytes: bytes,
      maxBytes: bytes,
      stepFactor: 2,
      stepBytes: 1,
      iters: 20,
      warmupIters: 5,
      check: false,
      dtype: 'float32',
      redop: 'sum',
      root: 0,
      timeoutMs: 600_000,
      procs: false,
      ...(algo === 'tuner' ? {} : { algorithm: algo }),
    },
    { env: { ...process.env, TSCCL_CHUNK_BYTES: String(parseSize(chunk, '--chunks')) } },
  );
  return { times: rows.map((r) => r.timeUs), algorithm: rows[0].algorithm };
}

console.log(
  `# ${ranks} thread ranks, median of ${rounds} alternating rounds, us (out-of-place / in-place), ${new Date().toISOString()}`,
);
console.log(
  `| op | bytes | algorithm | ${chunks.map((c) => `piece ${c}`).join(' | ')} | ${chunks
    .slice(1)
    .map((c) => `${c} / ${chunks[0]}`)
    .join(' | ')} |`,
);
console.log(
  `|---|---:|---|${chunks.map(() => '---:').join('|')}|${chunks
    .slice(1)
    .map(() => '---:')
    .join('|')}|`,
);
for (const op of ops) {
  for (const size of sizes) {
    for (const algo of algos) {
      const samples = chunks.map(() => [[], []]);
      let recorded = algo;
      for (let round = 0; round < rounds; round++) {
        for (const [i, chunk] of chunks.entries()) {
          const { times, algorithm } = await measure(op, size, chunk, algo);
          times.forEach((t, place) => {
            samples[i][place].push(t);
          });
          recorded = algorithm;
        }
      }
      const medians = samples.map(([outOfPlace, inPlace]) => [median(outOfPlace), median(inPlace)]);
      const cells = medians.map(([a, b]) => `${a.toFixed(0)} / ${b.toFixed(0)}`);
      const ratios = medians
        .slice(1)
        .map(([a, b]) => `${(a / medians[0][0]).toFixed(2)} / ${(b / medians[0][1]).toFixed(2)}`);
      console.log(
        `| ${op} | ${size} | ${algo === 'tuner' ? `${recorded} (tuner)` : recorded} | ${cells.join(' | ')} | ${ratios.join(' | ')} |`,
      );
    }
  }
}
