import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { rmSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { test } from 'node:test';
import { markDirectory, mark } from '../harness/marks.js';
import { createNetnsPair, netnsUnavailable, tscclInNamespace } from '../harness/netns.js';

const fixture = fileURLToPath(new URL('../fixtures/collectives-rank.js', import.meta.url));
const skip = netnsUnavailable();
if (skip !== undefined) console.log(`# multi-host tests skipped: ${skip}`);

for (const rate of [undefined, '200mbit']) {
  test(`two hosts (network namespaces${rate ? `, link limited to ${rate}` : ''}), 2 ranks each: every collective`, {
    skip,
  }, async () => {
    const pair = createNetnsPair(rate ? 'r' : 'p', rate);
    try {
      const env = { ...process.env, TSCCL_JOB_TOKEN: 'multi-host-test-secret', TSCCL_TIMEOUT_MS: '60000' };
      const args = JSON.stringify({ counts: [0, 1, 31], largeCount: rate ? 1 << 20 : 4099, largeDTypes: ['float32'] });
      const common = [
        'launch',
        '--nnodes',
        '2',
        '--nproc-per-node',
        '2',
        '--master-addr',
        pair.addresses[0],
        '--master-port',
        '29555',
        fixture,
        args,
      ];
      const [a, b] = await Promise.all([
        tscclInNamespace(pair.names[0], [...common.slice(0, 1), '--node-rank', '0', ...common.slice(1)], env),
        tscclInNamespace(pair.names[1], [...common.slice(0, 1), '--node-rank', '1', ...common.slice(1)], env),
      ]);
      assert.equal(a.code, 0, a.out.slice(-2000));
      assert.equal(b.code, 0, b.out.slice(-2000));
      const results = [...(a.out + b.out).matchAll(/^\[(\d)\] result: (.*)$/gm)].map((m) => ({
        rank: Number(m[1]),
        ...(JSON.parse(m[2]) as { cases: number; failures: string[] }),
      }));
      assert.deepEqual(results.map((r) => r.rank).sort(), [0, 1, 2, 3]);
      for (const r of results) {
        assert.deepEqual(r.failures, [], `rank ${r.rank}`);
        assert.ok(r.cases > 300);
      }
    } finally {
      pair.close();
    }
  });
}

test('a node with the wrong job token is refused; it does not reach the job', { skip }, async () => {
  const pair = createNetnsPair('t');
  try {
    const args = JSON.stringify({ counts: [1], largeCount: 1, largeDTypes: [] });
    const common = [
      '--nnodes',
      '2',
      '--nproc-per-node',
      '1',
      '--master-addr',
      pair.addresses[0],
      '--master-port',
      '29556',
      fixture,
      args,
    ];
    const [a, b] = await Promise.all([
      tscclInNamespace(pair.names[0], ['launch', '--node-rank', '0', '--timeout-ms', '3000', ...common], {
        ...process.env,
        TSCCL_JOB_TOKEN: 'right',
      }),
      tscclInNamespace(pair.names[1], ['launch', '--node-rank', '1', '--timeout-ms', '3000', ...common], {
        ...process.env,
        TSCCL_JOB_TOKEN: 'wrong',
      }),
    ]);
    assert.notEqual(b.code, 0);
    assert.match(b.out, /refused this client: wrong job token/);
    assert.notEqual(a.code, 0); // node 0 waits for a rank that never joins, then says so
    assert.match(a.out, /TSCCL_ERR_/);
  } finally {
    pair.close();
  }
});

test('a network partition (link down, no FIN or RST) is detected by heartbeats well within the timeout', {
  skip,
}, async () => {
  const pair = createNetnsPair('h');
  // The ranks wait for the mark 'cut', which the test makes once both are ready and the link is down.
  const marks = markDirectory();
  try {
    const env = {
      ...process.env,
      TSCCL_JOB_TOKEN: 'partition',
      TSCCL_TIMEOUT_MS: '30000',
      TSCCL_HEARTBEAT_TIMEOUT_MS: '1500',
      TSCCL_DEBUG: 'NONE',
      TSCCL_RANK_GRACE_MS: '20000',
    };
    const partition = fileURLToPath(new URL('../fixtures/partition-rank.js', import.meta.url));
    const common = [
      '--nnodes',
      '2',
      '--nproc-per-node',
      '1',
      '--master-addr',
      pair.addresses[0],
      '--master-port',
      '29557',
      partition,
      JSON.stringify({ marks }),
    ];
    let cut = false;
    const ready = new Set<number>();
    const cutOnce = (node: number) => (text: string) => {
      if (text.includes('PARTITION-READY')) ready.add(node);
      if (cut || ready.size < 2) return;
      cut = true;
      execFileSync('ip', ['-n', pair.names[1], 'link', 'set', 'tvhb', 'down']);
      mark(marks, 'cut');
    };
    const [a, b] = await Promise.all([
      tscclInNamespace(pair.names[0], ['launch', '--node-rank', '0', ...common], env, { onOutput: cutOnce(0) }),
      tscclInNamespace(pair.names[1], ['launch', '--node-rank', '1', ...common], env, { onOutput: cutOnce(1) }),
    ]);
    assert.ok(cut, 'the link was never cut');
    const results = [...(a.out + b.out).matchAll(/^\[(\d)\] result: (.*)$/gm)].map(
      (m) => JSON.parse(m[2]) as { code: string; message: string; ms: number },
    );
    assert.equal(results.length, 2, a.out + b.out);
    for (const r of results) {
      assert.equal(r.code, 'TSCCL_ERR_PEER_LOST', r.message);
      // Named by the heartbeat (PEER_LOST), not by the call's 30 s timeout (TSCCL_ERR_TIMEOUT).
      assert.match(r.message, /heard nothing from rank \d for \d+ ms \(heartbeat timeout 1500 ms\)|gave up on world/);
    }
  } finally {
    pair.close();
    rmSync(marks, { recursive: true, force: true });
  }
});
