#!/usr/bin/env node
// All-reduce in place against out of place on thread ranks, side by side in one job: the
// tuner's choice and each forced algorithm, at each size, taking turns over rounds (a slow spell
// of the machine then falls on one round of many rows). Each cell is the median over rounds of
// the mean of back-to-back calls (50 to 1000 a size, after 20 warm-up calls), us.
// Usage: node bench/in-place.mjs [--ranks 2] [--rounds 3] [--sizes 16K,128K,512K,2M,8M]
//          [--algos tuner,recursive_doubling,direct,ring]
import { execFileSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { isMainThread } from 'node:worker_threads';

const root = fileURLToPath(new URL('..', import.meta.url));

if (isMainThread) {
  const argv = process.argv.slice(2);
  const flag = (name, fallback) => {
    const i = argv.indexOf(name);
    return i < 0 ? fallback : argv[i + 1];
  };
  const ranks = flag('--ranks', '2');
  const env = {
    ...process.env,
    IN_PLACE_ROUNDS: flag('--rounds', '3'),
    IN_PLACE_SIZES: flag('--sizes', '16K,128K,512K,2M,8M'),
    IN_PLACE_ALGOS: flag('--algos', 'tuner,recursive_doubling,direct,ring'),
  };
  console.log(`# all_reduce, ${ranks} thread ranks, float32, ${new Date().toISOString()}, node ${process.version}`);
  console.log('# us per call, out of place / in place; "tuner" is what the tuner picked, named per column');
  const out = execFileSync(
    process.execPath,
    [`${root}bin/tsccl.js`, 'run', '-n', ranks, fileURLToPath(import.meta.url)],
    {
      env,
      encoding: 'utf8',
    },
  );
  process.stdout.write(out.replace(/^\[0\] /gm, ''));
} else {
  const { init } = await import('../dist/src/index.js');
  const { parseSize } = await import('../dist/src/algorithms/bench-ops.js');
  const { median } = await import('../dist/src/tune/median.js');
  const comm = await init();
  const rounds = Number(process.env.IN_PLACE_ROUNDS);
  const sizes = process.env.IN_PLACE_SIZES.split(',').map((size) => parseSize(size, '--sizes'));
  const algos = process.env.IN_PLACE_ALGOS.split(',');
  const times = new Map();
  const ran = new Map();
  for (let round = 0; round < rounds; round++) {
    for (const bytes of sizes) {
      const count = bytes / 4;
      const [x, y] = [comm.alloc('float32', count), comm.alloc('float32', count)];
      for (const algo of algos) {
        const chosen = algo === 'tuner' ? {} : { algorithm: algo };
        for (const inPlace of [false, true]) {
          const call = () => comm.allReduce(x, inPlace ? chosen : { ...chosen, output: y });
          const calls = Math.max(50, Math.min(1000, Math.floor((64 << 20) / bytes)));
          for (let i = 0; i < 20; i++) await call();
          const start = performance.now();
          for (let i = 0; i < calls; i++) await call();
          const key = `${bytes}|${algo}|${inPlace}`;
          times.set(key, [...(times.get(key) ?? []), ((performance.now() - start) * 1000) / calls]);
          ran.set(key, comm.flightRecords().records.at(-1)?.algorithm);
        }
      }
      comm.free(x);
      comm.free(y);
    }
  }
  if (comm.rank === 0) {
    console.log(`| bytes | ${algos.join(' | ')} |`);
    console.log(`|---:|${algos.map(() => '---:').join('|')}|`);
    for (const bytes of sizes) {
      const cells = algos.map((algo) => {
        const [out, inPlace] = [false, true].map((p) => median(times.get(`${bytes}|${algo}|${p}`)).toFixed(1));
        const names =
          algo === 'tuner' ? ` (${ran.get(`${bytes}|${algo}|false`)} / ${ran.get(`${bytes}|${algo}|true`)})` : '';
        return `${out} / ${inPlace}${names}`;
      });
      console.log(`| ${bytes} | ${cells.join(' | ')} |`);
    }
  }
  await comm.destroy();
}
