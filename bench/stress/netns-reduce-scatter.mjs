#!/usr/bin/env node
// Correctness stress, not a benchmark: reduceScatter prod of float32 from plain (unregistered)
// memory, out of place, over two "hosts" (network namespaces joined by a veth pair limited with
// tc tbf), 2 process ranks per host; every call's result checked on every rank. A slow link makes
// the reads of a rank's three sockets interleave and end inside elements, where a shared read
// buffer must not lose the first bytes of an element. Needs root and iproute2.
// Usage: node bench/stress/netns-reduce-scatter.mjs [calls=200] [rate=200mbit] [count=1048576]
import { fileURLToPath } from 'node:url';
import { init } from '../../dist/src/comm/init.js';
import { firstDifference, makeData, referenceReduce } from '../../dist/src/bench/pattern.js';
import { createNetnsPair, netnsUnavailable, tscclInNamespace } from '../../dist/test/harness/netns.js';

/** One rank (run by tsccl launch): `calls` checked calls; prints each wrong element and a count. */
export default async function stressRank({ args }) {
  const [calls, count] = args.map(Number);
  const comm = await init({ timeoutMs: 60000 });
  let wrong = 0;
  for (let call = 0; call < calls; call++) {
    const inputs = Array.from({ length: comm.size }, (_, r) => makeData('float32', 'prod', r, comm.size * count, call));
    const want = referenceReduce('float32', 'prod', inputs).subarray(comm.rank * count, (comm.rank + 1) * count);
    const output = new Float32Array(count);
    await comm.reduceScatter(inputs[comm.rank], { op: 'prod', output, dtype: 'float32' });
    const at = firstDifference(output, want);
    if (at >= 0) {
      wrong++;
      console.log(`call ${call}: element ${at} is ${output[at]}, expected ${want[at]}`);
    }
  }
  console.log(`wrong: ${wrong} of ${calls}`);
  await comm.destroy();
  if (wrong > 0) throw new Error(`rank ${comm.rank}: ${wrong} of ${calls} calls wrong`);
}

// Run directly (not as a rank, which the launcher gives a RANK): set up the hosts and launch.
if (process.env.RANK === undefined) {
  const [calls = '200', rate = '200mbit', count = String(1 << 20)] = process.argv.slice(2);
  const why = netnsUnavailable();
  if (why) {
    console.error(`netns-reduce-scatter: ${why}`);
    process.exit(2);
  }
  const pair = createNetnsPair('s', rate);
  const node = (i) =>
    tscclInNamespace(
      pair.names[i],
      [
        'launch',
        '--nnodes',
        '2',
        '--node-rank',
        String(i),
        '--nproc-per-node',
        '2',
        '--master-addr',
        pair.addresses[0],
        '--master-port',
        '29591',
        fileURLToPath(import.meta.url),
        calls,
        count,
      ],
      { ...process.env, TSCCL_JOB_TOKEN: 'netns-stress' },
      { echo: true },
    );
  try {
    const nodes = await Promise.all([node(0), node(1)]);
    process.exitCode = nodes.every((n) => n.code === 0) ? 0 : 1;
  } finally {
    pair.close();
  }
}
