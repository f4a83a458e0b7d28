#!/usr/bin/env node
// Small broadcasts back to back on thread ranks, this checkout against another build, in
// alternating runs: the mean per call on every rank over `calls` calls (after 2000 untimed), five
// batches a run. Shows what a root that runs ahead of its readers is worth where ranks outnumber
// the cores.
//   node bench/bounds/broadcast-back-to-back.mjs [--against DIR] [--ranks 4] [--bytes 8] [--calls 20000] [--runs 2]
import { execFileSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';

const argv = process.argv.slice(2);
const flag = (name, fallback) => {
  const i = argv.indexOf(name);
  return i < 0 ? fallback : argv[i + 1];
};

// A rank of a run says which build, size and count it runs in the environment, which thread ranks share.
const child = process.env.BROADCAST_BACK_TO_BACK;
if (child !== undefined) {
  const [build, bytesText, callsText] = child.split(',');
  const { init } = await import(`${build}/dist/src/index.js`);
  const [bytes, calls] = [Number(bytesText), Number(callsText)];
  const comm = await init();
  const buffer = new Uint8Array(bytes);
  const call = () => comm.broadcast(buffer, { root: 0 });
  for (let i = 0; i < 2000; i++) await call();
  const batches = [];
  for (let batch = 0; batch < 5; batch++) {
    await comm.barrier();
    const start = performance.now();
    for (let i = 0; i < calls; i++) await call();
    batches.push(((performance.now() - start) * 1000) / calls);
  }
  const all = new Float64Array(5 * comm.size);
  await comm.allGather(Float64Array.from(batches), { output: all });
  if (comm.rank === 0) console.log(JSON.stringify(Array.from(all)));
  await comm.destroy();
} else {
  const here = fileURLToPath(new URL('../..', import.meta.url)).replace(/\/$/, '');
  const against = flag('--against', undefined);
  const [ranks, bytes, calls, runs] = ['--ranks', '--bytes', '--calls', '--runs'].map((name, i) =>
    Number(flag(name, [4, 8, 20000, 2][i])),
  );
  const builds = against === undefined ? [here] : [here, against];
  console.log(`# broadcast of ${bytes} B from rank 0, ${ranks} thread ranks, ${new Date().toISOString()}`);
  console.log(`# per run: ${calls} calls after 2000, 5 batches; us per call, every rank's batch means`);
  console.log('| build | run | min | median | max |\n|---|---:|---:|---:|---:|');
  for (let run = 1; run <= runs; run++) {
    for (const build of builds) {
      const out = execFileSync(
        process.execPath,
        [`${build}/bin/tsccl.js`, 'run', '-n', String(ranks), fileURLToPath(import.meta.url)],
        { encoding: 'utf8', env: { ...process.env, BROADCAST_BACK_TO_BACK: `${build},${bytes},${calls}` } },
      );
      const times = JSON.parse(
        out
          .trim()
          .split('\n')
          .at(-1)
          .replace(/^\[\d+\] /, ''),
      ).sort((a, b) => a - b);
      const at = (q) => times[Math.min(times.length - 1, Math.floor(q * times.length))].toFixed(2);
      console.log(`| ${build === here ? 'this checkout' : build} | ${run} | ${at(0)} | ${at(0.5)} | ${at(1)} |`);
    }
  }
}
