#!/usr/bin/env node
// How low the worst regret can go on this machine, from saved bench/regret.mjs tables of the
// same grid run at different times: for every row, the one algorithm that, fixed for that row
// in every run, has the smallest worst regret over the runs (chosen knowing all the runs, which
// no tuner can). Where even that exceeds 1.3, the row's winner changes from run to run by more
// than the bound, and no fixed choice, a model's or a table's, meets it in every run.
// Usage: node bench/regret-bound.mjs <regret-output.md> <regret-output.md> ...
import { regretRows, regretSummary } from './lib/regret-rows.mjs';

const files = process.argv.slice(2);
if (files.length < 2)
  throw new Error('usage: node bench/regret-bound.mjs <regret-output.md> <regret-output.md> ... (two runs or more)');
const runs = files.map(regretRows);
const key = (row) => `${row.op} ${row.ranks} ${row.bytes}`;
const byKey = runs.map((rows) => new Map(rows.map((row) => [key(row), row])));
const common = runs[0].map(key).filter((k) => byKey.every((rows) => rows.has(k)));
const regretOf = (row, algorithm) => row.times[algorithm] / Math.min(...Object.values(row.times));
const fixedRegrets = runs.map(() => []);
const tunerRegrets = runs.map(() => []);
const table = [];
for (const k of common) {
  const rows = byKey.map((rows) => rows.get(k));
  const algorithms = Object.keys(rows[0].times).filter((a) => rows.every((row) => row.times[a] !== undefined));
  const worstOf = (a) => Math.max(...rows.map((row) => regretOf(row, a)));
  const best = algorithms.sort((a, b) => worstOf(a) - worstOf(b))[0];
  rows.forEach((row, i) => {
    fixedRegrets[i].push(regretOf(row, best));
    tunerRegrets[i].push(regretOf(row, row.chose));
  });
  table.push({ k, best, worst: worstOf(best), tuner: Math.max(...rows.map((row) => regretOf(row, row.chose))) });
}
table.sort((a, b) => b.worst - a.worst);
console.log(
  `# ${common.length} rows in all ${files.length} runs; rows whose best fixed choice still exceeds 1.15 in some run`,
);
console.log(
  "| op ranks bytes | best fixed algorithm | its worst regret over the runs | the tuner's worst over the runs |\n|---|---|---:|---:|",
);
for (const { k, best, worst, tuner } of table.filter((t) => t.worst > 1.15))
  console.log(`| ${k} | ${best} | ${worst.toFixed(2)} | ${tuner.toFixed(2)} |`);
console.log('\n| run | best fixed choices | the tuner |\n|---|---|---|');
files.forEach((file, i) => {
  console.log(`| ${file} | ${regretSummary(fixedRegrets[i])} | ${regretSummary(tunerRegrets[i])} |`);
});
