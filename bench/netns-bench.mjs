#!/usr/bin/env node
// all_reduce across two "hosts" (Linux network namespaces joined by a veth pair, optionally
// rate-limited with tc tbf), 2 process ranks per host, nccl-tests table. Needs root and iproute2.
// Usage: node bench/netns-bench.mjs [rate, e.g. 1gbit]
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { aggregateRows } from '../dist/src/bench/run-bench.js';
import { formatTable } from '../dist/src/bench/format-table.js';
import { createNetnsPair, netnsUnavailable } from '../dist/test/harness/netns.js';

const rate = process.argv[2];
const why = netnsUnavailable();
if (why) {
  console.error(`netns-bench: ${why}`);
  process.exit(2);
}
const bin = fileURLToPath(new URL('../bin/tsccl.js', import.meta.url));
const rankScript = fileURLToPath(new URL('../dist/src/bench/bench-rank.js', import.meta.url));
const options = {
  op: 'all_reduce',
  ranks: 4,
  minBytes: 8,
  maxBytes: 64 * 1024 * 1024,
  stepFactor: 8,
  stepBytes: 0,
  iters: 10,
  warmupIters: 3,
  check: true,
  dtype: 'float32',
  redop: 'sum',
  root: 0,
  timeoutMs: 120000,
};
const pair = createNetnsPair('b', rate);
const node = (i) =>
  new Promise((resolve) => {
    const child = spawn(
      'ip',
      [
        'netns',
        'exec',
        pair.names[i],
        process.execPath,
        bin,
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
        '29590',
        rankScript,
        JSON.stringify(options),
      ],
      { env: { ...process.env, TSCCL_JOB_TOKEN: 'netns-bench' } },
    );
    let out = '';
    child.stdout.on('data', (d) => {
      out += d;
    });
    child.stderr.on('data', (d) => process.stderr.write(d));
    child.on('exit', () => resolve(out));
  });
try {
  const outs = await Promise.all([node(0), node(1)]);
  const perRank = [];
  for (const m of outs.join('').matchAll(/^\[(\d)\] result: (.*)$/gm)) perRank[Number(m[1])] = JSON.parse(m[2]);
  const rows = aggregateRows(options, perRank);
  console.log(
    formatTable(
      options,
      rows,
      `all_reduce, 2 hosts (network namespaces${rate ? `, veth limited to ${rate}` : ', veth'}) x 2 process ranks, hierarchical`,
    ),
  );
} finally {
  pair.close();
}
