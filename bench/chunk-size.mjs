#!/usr/bin/env node
// Pipelining piece size between thread ranks, side by side: `tsccl bench` (out-of-place and
// in-place rows, 20 timed calls each) with TSCCL_CHUNK_BYTES set to each value in turn,
// alternating the values within every round, each (op, size, algorithm) as its own launch.
// Prints per op, size and algorithm the median of the rounds for every piece size, and its
// ratio to the first piece size given. The piece size is read once per process, hence a launch
// per value. Usage: node bench/chunk-size.mjs [--ranks 2] [--ops all_reduce,...]
//   [--bytes 2M,16M,64M] [--chunks 512K,4M] [--algos tuner|ring,direct,...] [--rounds 3]
import { execFileSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';

const argv = process.argv.slice(2);
const flag = (name, fallback) => { const i = argv.indexOf(name); return i < 0 ? fallback : argv[i + 1]; };
const list = (name, fallback) => flag(name, fallback).split(',');
const sizeBytes = (text) => {
  const match = /^(\d+)([KMG]?)$/i.exec(text);
  if (match === null) { console.error(`bench/chunk-size.mjs: ${text} is not a size (8, 512K, 4M)`); process.exit(2); }
  return Number(match[1]) * 1024 ** ' KMG'.indexOf((match[2] || ' ').toUpperCase());
};
const ranks = flag('--ranks', '2');
const ops = list('--ops', 'all_reduce,all_gather,reduce_scatter,broadcast');
const sizes = list('--bytes', '2M,16M,64M');
const chunks = list('--chunks', '512K,4M');
const algos = list('--algos', 'tuner');
const rounds = Number(flag('--rounds', '3'));
const cli = fileURLToPath(new URL('../bin/tsccl.js', import.meta.url));

/** One launch: the out-of-place and in-place times of one size, and the algorithm the calls recorded. */
function measure(op, size, chunk, algo) {
  const args = [cli, 'bench', '-o', op, '-g', ranks, '-b', size, '-e', size, '-c', '0', '--format', 'json', ...(algo === 'tuner' ? [] : ['--algo', algo])];
  const out = execFileSync(process.execPath, args, { env: { ...process.env, TSCCL_CHUNK_BYTES: String(sizeBytes(chunk)) }, encoding: 'utf8' });
  const rows = JSON.parse(out).rows;
  return { times: rows.map((r) => r.timeUs), algorithm: rows[0].algorithm };
}

const median = (xs) => [...xs].sort((a, b) => a - b)[xs.length >> 1];
console.log(`# ${ranks} thread ranks, median of ${rounds} alternating rounds, us (out-of-place / in-place), ${new Date().toISOString()}`);
console.log(`| op | bytes | algorithm | ${chunks.map((c) => `piece ${c}`).join(' | ')} | ${chunks.slice(1).map((c) => `${c} / ${chunks[0]}`).join(' | ')} |`);
console.log(`|---|---:|---|${chunks.map(() => '---:').join('|')}|${chunks.slice(1).map(() => '---:').join('|')}|`);
for (const op of ops) {
  for (const size of sizes) {
    for (const algo of algos) {
      const samples = chunks.map(() => [[], []]);
      let recorded = algo;
      for (let round = 0; round < rounds; round++) {
        chunks.forEach((chunk, i) => {
          const { times, algorithm } = measure(op, size, chunk, algo);
          times.forEach((t, place) => samples[i][place].push(t));
          recorded = algorithm;
        });
      }
      const medians = samples.map(([outOfPlace, inPlace]) => [median(outOfPlace), median(inPlace)]);
      const cells = medians.map(([a, b]) => `${a.toFixed(0)} / ${b.toFixed(0)}`);
      const ratios = medians.slice(1).map(([a, b]) => `${(a / medians[0][0]).toFixed(2)} / ${(b / medians[0][1]).toFixed(2)}`);
      console.log(`| ${op} | ${size} | ${algo === 'tuner' ? `${recorded} (tuner)` : recorded} | ${cells.join(' | ')} | ${ratios.join(' | ')} |`);
    }
  }
}
