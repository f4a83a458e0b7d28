import assert from 'node:assert/strict';
import { fileURLToPath } from 'node:url';
import { test } from 'node:test';
import { COMPRESSION_FORMATS } from '../../src/compress/compression-spec.js';
import { createNetnsPair, netnsUnavailable, tscclInNamespace } from '../harness/netns.js';

const fixture = fileURLToPath(new URL('../fixtures/compression-rank.js', import.meta.url));
const skip = netnsUnavailable();
if (skip !== undefined) console.log(`# compression across hosts skipped: ${skip}`);

test('two hosts of 2 ranks each: all-reduces compress only between hosts, every collective within its bound, the same bits everywhere', {
  skip,
}, async () => {
  const pair = createNetnsPair('cz');
  try {
    const env = {
      ...process.env,
      TSCCL_JOB_TOKEN: 'compression-hosts-test',
      TSCCL_TIMEOUT_MS: '60000',
      TSCCL_COMPRESSION_PIECE: '512',
    };
    const formats = Object.keys(COMPRESSION_FORMATS);
    const args = JSON.stringify({
      formats,
      counts: [1, 7, 300, 1000, 2000],
      blockSize: 64,
      dtypes: ['float32', 'bfloat16'],
      piece: 512,
      perHost: 2,
    });
    const launch = (node: number) => [
      'launch',
      ...['--nnodes', '2', '--node-rank', String(node), '--nproc-per-node', '2'],
      ...['--master-addr', pair.addresses[0], '--master-port', '29556'],
      fixture,
      args,
    ];
    const [a, b] = await Promise.all([
      tscclInNamespace(pair.names[0], launch(0), env),
      tscclInNamespace(pair.names[1], launch(1), env),
    ]);
    assert.equal(a.code, 0, a.out.slice(-2000));
    assert.equal(b.code, 0, b.out.slice(-2000));
    const results = [...(a.out + b.out).matchAll(/^\[(\d)\] result: (.*)$/gm)].map((m) => ({
      rank: Number(m[1]),
      ...(JSON.parse(m[2]) as { cases: number; failures: string[]; digests: string[]; allReduceRuns: string[] }),
    }));
    assert.deepEqual(results.map((r) => r.rank).sort(), [0, 1, 2, 3]);
    const byCase = new Map<string, Set<string>>();
    for (const r of results) {
      assert.deepEqual(r.failures, [], `rank ${r.rank}`);
      assert.ok(r.cases >= formats.length * 2 * 5 * 5 * 3, `rank ${r.rank}: ${r.cases} cases`);
      // Every all-reduce reduced within the host first.
      assert.ok(r.allReduceRuns.length > 0);
      for (const run of r.allReduceRuns)
        assert.match(
          run,
          /^\S+: reduceScatter in the host \w+, allToAll \w+, allGather \w+, allGather in the host \w+/,
        );
      for (const line of r.digests) {
        const [label, digest] = line.split(': ');
        if (!byCase.has(label)) byCase.set(label, new Set());
        byCase.get(label)!.add(digest);
      }
    }
    for (const [label, digests] of byCase)
      if (!label.includes('reduceScatter')) assert.equal(digests.size, 1, `${label}: ranks hold different results`);
  } finally {
    pair.close();
  }
});
