// What a clock read costs through Node's global `performance` (a lazy getter on the global
// object) and through node:perf_hooks' binding of the same object, in turns, in one thread.
// Prints the median ns per read over the rounds and their ratio.
// Usage: node bench/bounds/clock-read.mjs [rounds=7] [reads=5000000]
import { performance as bound } from 'node:perf_hooks';
import { median } from '../../dist/src/tune/median.js';

const [rounds = 7, reads = 5_000_000] = process.argv.slice(2).map(Number);

function throughGlobal() {
  let sum = 0;
  for (let i = 0; i < reads; i++) sum += performance.now();
  return sum;
}
function throughBinding() {
  let sum = 0;
  for (let i = 0; i < reads; i++) sum += bound.now();
  return sum;
}
const ways = [
  ['global performance.now()', throughGlobal],
  ["node:perf_hooks' performance.now()", throughBinding],
];
const times = ways.map(() => []);
for (let round = 0; round < rounds; round++) {
  ways.forEach(([, read], i) => {
    const start = process.hrtime.bigint();
    read();
    times[i].push(Number(process.hrtime.bigint() - start) / reads);
  });
}
console.log(
  `# ${new Date().toISOString()}, node ${process.version}; ${reads} reads a round, medians of ${rounds} rounds`,
);
const medians = times.map((t) => median(t));
ways.forEach(([label], i) => {
  console.log(`${label}: ${medians[i].toFixed(1)} ns a read`);
});
console.log(`ratio, global / binding: ${(medians[0] / medians[1]).toFixed(2)}`);
