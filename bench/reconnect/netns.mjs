#!/usr/bin/env node
// What a connection reset costs a call: checksummed all-reduces between two "hosts" (network
// namespaces on one bridge, links shaped to --rate), every other one with all the ranks'
// connections reset (`ss -K`) just after it starts; the ranks dial again and go on from the frame
// each socket broke in. With --retry, reconnection is off (TSCCL_RECONNECT_MS=0): a reset loses
// the link, and the call is run again over new connections (operation retry). Prints the median
// time of clean and reset calls side by side. Needs root and iproute2 (ss).
// Usage: node bench/reconnect/netns.mjs [--rate 1gbit] [--size 64] [--rounds 10] [--retry]
import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { createNetnsStar, netnsUnavailable } from '../../dist/test/harness/netns.js';
import { netnsJob } from '../lib/netns-job.mjs';

const { values } = parseArgs({
  options: {
    rate: { type: 'string', default: '1gbit' },
    size: { type: 'string', default: '64' },
    rounds: { type: 'string', default: '10' },
    retry: { type: 'boolean', default: false },
  },
});
const why = netnsUnavailable();
if (why) {
  console.error(`reconnect bench: ${why}`);
  process.exit(2);
}
const PORT = 29940;
const rounds = Number(values.rounds);
const marks = mkdtempSync(join(tmpdir(), 'tsccl-reconnect-'));
const star = createNetnsStar('rc', 2, values.rate);
process.env.TSCCL_CHECKSUM = '1';
if (values.retry) process.env.TSCCL_RECONNECT_MS = '0';
let resets = 0;
// Resets every connection of host 0 but the launcher's store when rank 0 marks a call.
const watcher = setInterval(() => {
  for (let round = 1; round < rounds; round += 2) {
    const asked = join(marks, `reset-${round}`);
    const done = join(marks, `done-${round}`);
    if (!existsSync(asked) || existsSync(done)) continue;
    const out = execFileSync('ip', [
      ...['netns', 'exec', star.names[0], 'ss', '-K', 'state', 'established'],
      `( sport != :${PORT} and dport != :${PORT} )`,
    ]).toString();
    resets += out.split('\n').filter((line) => line.startsWith('tcp')).length;
    writeFileSync(done, '');
  }
}, 1);
let results;
try {
  const script = fileURLToPath(new URL('rank.mjs', import.meta.url));
  results = await netnsJob(star, {
    script,
    args: [JSON.stringify({ mib: Number(values.size), rounds, marks })],
    port: PORT,
    token: 'reconnect-bench',
  });
} finally {
  clearInterval(watcher);
  star.close();
  rmSync(marks, { recursive: true, force: true });
}
const median = (xs) => [...xs].sort((a, b) => a - b)[xs.length >> 1];
// The slowest rank's time is the call's; round 0 (the first large call) is left out.
const calls = results[0].calls
  .slice(1)
  .map((c, i) => ({ ...c, ms: Math.max(...results.map((r) => r.calls[i + 1].ms)) }));
const clean = median(calls.filter((c) => !c.reset).map((c) => c.ms));
const reset = median(calls.filter((c) => c.reset).map((c) => c.ms));
console.log(
  `# reconnect bench: ${values.size} MiB checksummed out-of-place all-reduce, 2 hosts at ${values.rate}${values.retry ? ', TSCCL_RECONNECT_MS=0 (a reset is mended by operation retry)' : ''}, ${new Date().toISOString()}`,
);
console.log(
  `# ${resets} sockets reset by ss -K; reconnections counted by the ranks: ${results.map((r) => r.reconnects).join(', ')}; calls run again: ${results.map((r) => r.retries).join(', ')}`,
);
console.log(`clean calls, median ms      ${clean.toFixed(1)}`);
console.log(`calls with a reset, median  ${reset.toFixed(1)}`);
console.log(`cost of a reset             ${(reset - clean).toFixed(1)} ms (${(reset / clean).toFixed(2)}x)`);
