#!/usr/bin/env node
// Failover between network paths: two "hosts" (network namespaces) joined by two links, each its
// own interface (TSCCL_SOCKET_IFNAME chooses both), links shaped to --rate. One checksummed
// all-reduce of --size MiB per job, in three jobs side by side: over both paths; over path 0 alone
// (the link that survives below); over both paths with path 1 taken down once the call started.
// Prints each call's time (the slower rank's). Needs root and iproute2.
// Usage: node bench/failover/netns.mjs [--rate 500mbit] [--size 256]
import { execFileSync } from 'node:child_process';
import { rmSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { faultInCall } from '../../dist/test/harness/fault-in-call.js';
import { markDirectory } from '../../dist/test/harness/marks.js';
import { createNetnsPair, netnsUnavailable, tscclInNamespace } from '../../dist/test/harness/netns.js';

const { values } = parseArgs({
  options: { rate: { type: 'string', default: '500mbit' }, size: { type: 'string', default: '256' } },
});
const why = netnsUnavailable();
if (why) {
  console.error(`failover bench: ${why}`);
  process.exit(2);
}
const fixture = fileURLToPath(new URL('../../dist/test/fixtures/flap-rank.js', import.meta.url));
const count = (Number(values.size) * 2 ** 20) / 4;

/** One job; `fault` runs once both ranks are in the call. Resolves with the ranks' reports. */
async function job(ifname, port, fault) {
  const pair = createNetnsPair('fo', values.rate, 2);
  const marks = markDirectory();
  try {
    const common = ['--nnodes', '2', '--nproc-per-node', '1', '--master-addr', pair.addresses[0]];
    const args = [...common, '--master-port', String(port), fixture, JSON.stringify({ marks, count })];
    const env = { ...process.env, TSCCL_JOB_TOKEN: 'failover-bench', TSCCL_CHECKSUM: '1', TSCCL_SOCKET_IFNAME: ifname };
    const { onOutput } = faultInCall(marks, fault && (() => fault(pair)));
    const outs = await Promise.all(
      pair.names.map((ns, i) =>
        tscclInNamespace(ns, ['launch', '--node-rank', String(i), ...args], env, { onOutput: onOutput(i) }),
      ),
    );
    return [
      ...outs
        .map((o) => o.out)
        .join('')
        .matchAll(/^\[\d+\] result: (.*)$/gm),
    ].map((m) => JSON.parse(m[1]));
  } finally {
    pair.close();
    rmSync(marks, { recursive: true, force: true });
  }
}

const rows = [
  ['both paths', await job('tvfo', 29950)],
  ['path 0 alone', await job('tvfoa,tvfob', 29951)],
  [
    'both, path 1 down in the call',
    await job('tvfo', 29952, (pair) => execFileSync('ip', ['-n', pair.names[1], 'link', 'set', 'tvfod', 'down'])),
  ],
];
console.log(
  `# failover bench: ${values.size} MiB checksummed all-reduce, 2 hosts, 2 links of ${values.rate}, ${new Date().toISOString()}`,
);
for (const [name, reports] of rows) {
  const ms = Math.max(...reports.map((r) => r.ms));
  const codes = reports.map((r) => r.code).join(',');
  const counts = reports.map((r) => (r.code === 'OK' ? JSON.parse(r.message) : {}));
  console.log(
    `${name.padEnd(32)} ${ms.toFixed(0).padStart(7)} ms  ${codes}  failovers ${counts.map((c) => c.failovers ?? '-').join(',')}`,
  );
}
