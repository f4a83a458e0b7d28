#!/usr/bin/env node
// What a TCP frame's 32-byte header costs to write and read back (src/transport/tcp/frame.ts,
// encodeHeader and decodeHeader: once each per small message a rank sends and receives), in this
// checkout and, with --against DIR, in another built checkout, in turns in one thread. Prints the
// median ns per encode + decode of each and their ratio. Needs `npx tsc` first (dist/).
// Usage: node bench/bounds/frame-header.mjs [--against DIR] [rounds=7] [frames=2000000]
import { resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { median } from '../../dist/src/tune/median.js';

const args = process.argv.slice(2);
const at = args.indexOf('--against');
const against = at < 0 ? undefined : args.splice(at, 2)[1];
const [rounds = 7, frames = 2_000_000] = args.map(Number);
const builds = [['this checkout', await import('../../dist/src/transport/tcp/frame.js')]];
if (against !== undefined)
  builds.push([against, await import(pathToFileURL(resolve(against, 'dist/src/transport/tcp/frame.js')).href)]);

const header = { flags: 0, channel: 0, commId: 123456, seq: 0, opcode: 3, length: 48, checksum: 0 };
const memory = Buffer.allocUnsafe(64);
function run(frame) {
  let sum = 0;
  for (let i = 0; i < frames; i++) {
    header.seq = i;
    frame.encodeHeader(header, memory);
    sum += frame.decodeHeader(memory, 2 ** 30).seq;
  }
  if (sum !== (frames * (frames - 1)) / 2) throw new Error('a header read back wrong');
}
const times = builds.map(() => []);
for (let round = 0; round < rounds; round++)
  builds.forEach(([, frame], i) => {
    const start = performance.now();
    run(frame);
    times[i].push(((performance.now() - start) * 1e6) / frames);
  });
const ns = times.map(median);
for (const [i, [name]] of builds.entries()) console.log(`${name}: ${ns[i].toFixed(1)} ns per header written and read`);
if (builds.length > 1)
  console.log(`this / other: ${(ns[0] / ns[1]).toFixed(2)} (medians of ${rounds} rounds in turns)`);
