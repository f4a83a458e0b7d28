#!/usr/bin/env node
// How fast one core copies data that another core has just written (it sits dirty in the
// writer's private cache), against data written long before (clean, in the shared cache or in
// memory). A ring's all-gather and a direct all-reduce's second half read what the peer wrote
// earlier in the same call; recursive doubling reads the peer's untouched input.
// Usage: node bench/bounds/fresh-read.mjs [--piece 524288] [--total 16777216] [--rounds 5]
import { Worker } from 'node:worker_threads';
import { median } from '../../dist/src/tune/median.js';

const option = (name, fallback) => {
  const at = process.argv.indexOf(name);
  return at > 0 ? Number(process.argv[at + 1]) : fallback;
};
const piece = option('--piece', 512 * 1024);
const total = option('--total', 16 * 1024 * 1024);
const rounds = option('--rounds', 5);
const memory = new SharedArrayBuffer(3 * total + 64);
const flags = new Int32Array(memory, 3 * total, 16);

// The writer fills its region piece by piece; after each piece it raises the flag the reader
// waits on (spinning: both threads have a core), so the reader copies each piece just written.
const writer = new Worker(
  `
  const { workerData: { memory, piece, total, rounds } } = require('node:worker_threads');
  const bytes = new Uint8Array(memory, 0, total);
  const flags = new Int32Array(memory, 3 * total, 16);
  const source = new Uint8Array(piece).fill(7);
  for (let r = 0; r < 2 * rounds; r++) {
    while (Atomics.load(flags, 1) !== r) {}
    for (let j = 0; j * piece < total; j++) {
      bytes.set(source, j * piece);
      Atomics.store(flags, 0, r * 100000 + j + 1);
    }
  }
`,
  { eval: true, workerData: { memory, piece, total, rounds } },
);

const fresh = new Uint8Array(memory, 0, total);
const clean = new Uint8Array(memory, total, total).fill(3);
const target = new Uint8Array(memory, 2 * total, total);
const freshUs = [];
const cleanUs = [];
for (let r = 0; r < 2 * rounds; r++) {
  // Odd rounds: the same copies from a region written long ago, for comparison.
  if (r % 2 === 1) {
    const t = performance.now();
    for (let j = 0; j * piece < total; j++) target.set(clean.subarray(j * piece, (j + 1) * piece), j * piece);
    cleanUs.push((performance.now() - t) * 1000);
  }
  Atomics.store(flags, 1, r);
  let copiedUs = 0;
  for (let j = 0; j * piece < total; j++) {
    while (Atomics.load(flags, 0) < r * 100000 + j + 1) {}
    const t = performance.now();
    target.set(fresh.subarray(j * piece, (j + 1) * piece), j * piece);
    copiedUs += (performance.now() - t) * 1000;
  }
  if (r % 2 === 0) freshUs.push(copiedUs);
}
await writer.terminate();
const [f, c] = [median(freshUs), median(cleanUs)];
console.log(
  `piece ${piece} B, ${total} B per round, median of ${rounds}: just written by the other core ${(total / f / 1000).toFixed(2)} GB/s, ` +
    `written long before ${(total / c / 1000).toFixed(2)} GB/s, ratio ${(c / f).toFixed(2)}`,
);
