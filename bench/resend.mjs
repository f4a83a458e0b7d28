#!/usr/bin/env node
// What resend on corruption costs over TCP: 2 process ranks, all_reduce, every frame checksummed
// (TSCCL_CHECKSUM=1), `tsccl bench` with its data check on. Columns, taking turns in each round
// of one run, medians over rounds:
//   base:  another built checkout (--baseline DIR), without acknowledgements or resend
//   clean: this build, no fault: the cost of keeping frames and acknowledging them
//   flips: this build with a bit flipped in every Kth frame rank 0 sends (--every K, default 20;
//          the test hook of test/harness/frame-faults.ts, loaded with node --import): the cost
//          of recovering, and proof that every result stayed right (the wrong column)
// Usage: node bench/resend.mjs [--baseline DIR] [--rounds N] [--every K] [--sizes 8388608,134217728]
import { execFileSync, spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('..', import.meta.url));
const argv = process.argv.slice(2);
const flag = (name) => {
  const i = argv.indexOf(name);
  return i < 0 ? undefined : argv.splice(i, 2)[1];
};
const baseline = flag('--baseline');
const rounds = Number(flag('--rounds') ?? 3);
const every = Number(flag('--every') ?? 20);
const sizes = (flag('--sizes') ?? `${8 * 1024 * 1024},${128 * 1024 * 1024}`).split(',').map(Number);
const hook = join(root, 'dist/test/harness/frame-faults.js');

/** `tsccl bench` arguments for `calls` timed all-reduces of one size. */
const benchArgs = (checkout, bytes, calls, json) => [
  join(checkout, 'bin/tsccl.js'),
  'bench',
  '--procs',
  ...['-o', 'all_reduce', '-g', '2', '-b', String(bytes), '-e', String(bytes)],
  ...['-n', String(calls), '-w', '2', '-c', '1'],
  ...(json ? ['--format', 'json'] : []),
];

/** One `tsccl bench` of one size: the out-of-place time in us and the wrong results it counted. */
function run(checkout, bytes, env) {
  const out = JSON.parse(
    execFileSync(process.execPath, benchArgs(checkout, bytes, bytes >= 64 * 1024 * 1024 ? 5 : 20, true), {
      maxBuffer: 1 << 26,
      env: { ...process.env, TSCCL_CHECKSUM: '1', ...env },
    }).toString(),
  );
  const row = out.rows.find((r) => !r.inPlace) ?? out.rows[0];
  return { us: row.timeUs, wrong: out.rows.reduce((sum, r) => sum + r.wrong, 0) };
}

const columns = [
  ...(baseline === undefined ? [] : [['base', () => baseline, {}]]),
  ['clean', () => root, {}],
  ['flips', () => root, { TSCCL_TEST_FAULT: `flipevery@0#${every}`, NODE_OPTIONS: `--import=${hook}` }],
];
const times = new Map(sizes.map((s) => [s, new Map(columns.map(([name]) => [name, []]))]));
const wrong = new Map(columns.map(([name]) => [name, 0]));
for (let round = 0; round < rounds; round++) {
  for (const bytes of sizes) {
    for (const [name, checkout, env] of columns) {
      const r = run(checkout(), bytes, env);
      times.get(bytes).get(name).push(r.us);
      wrong.set(name, wrong.get(name) + r.wrong);
    }
  }
  console.error(`# round ${round + 1} of ${rounds} done`);
}
const median = (xs) => [...xs].sort((a, b) => a - b)[(xs.length - 1) >> 1];
const names = columns.map(([name]) => name);
console.log(`# all_reduce, 2 processes over TCP loopback, TSCCL_CHECKSUM=1, medians of ${rounds} rounds (us per call)`);
console.log(`| bytes | ${names.join(' | ')} |${baseline === undefined ? '' : ' clean/base |'} flips/clean |`);
console.log(`|---|${names.map(() => '---|').join('')}${baseline === undefined ? '' : '---|'}---|`);
for (const bytes of sizes) {
  const m = new Map(names.map((n) => [n, median(times.get(bytes).get(n))]));
  const cells = names.map((n) => m.get(n).toFixed(0));
  const ratio = (a, b) => (m.get(a) / m.get(b)).toFixed(3);
  console.log(
    `| ${bytes} | ${cells.join(' | ')} |${baseline === undefined ? '' : ` ${ratio('clean', 'base')} |`} ${ratio('flips', 'clean')} |`,
  );
}
console.log(`# wrong results: ${names.map((n) => `${n} ${wrong.get(n)}`).join(', ')}`);

// One more flips run of the smallest size with TSCCL_DEBUG=INFO (untimed: the log costs time),
// counting the frames that came again, so the table is known to have had faults to recover from.
const [, , flipsEnv] = columns.at(-1);
const seen = spawnSync(process.execPath, benchArgs(root, sizes[0], 20, false), {
  env: { ...process.env, TSCCL_CHECKSUM: '1', TSCCL_DEBUG: 'INFO', ...flipsEnv },
  maxBuffer: 1 << 28,
});
const recovered = (seen.stderr.toString().match(/came again intact/g) ?? []).length;
console.log(`# a flips run of ${sizes[0]} bytes, 22 calls, logged ${recovered} frames that came again intact`);
