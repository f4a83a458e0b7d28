import assert from 'node:assert/strict';
import { test } from 'node:test';
import { FlowBudgetExceeded } from '../../src/sim/sim-call.js';
import { simulateRow } from '../../src/sim/simulate.js';
import { buildPreset } from '../../src/topology/presets/presets.js';
import { TopologyGraph } from '../../src/topology/topology-graph.js';
import { runTsccl } from '../harness/cli.js';

const cluster = new TopologyGraph(buildPreset('dgx-h100', { nodes: 4 }));
const request = {
  op: 'all_reduce' as const,
  bytes: 256 * 2 ** 20,
  mode: 'flow' as const,
  nvls: false,
  elementBytes: 4,
  root: 0,
  algorithm: 'ring',
};

test('a watched flow simulation reports rising progress and stops at its deadline', () => {
  const seen: number[] = [];
  const row = simulateRow(cluster, cluster.accelerators, { ...request, watch: { progress: (f) => seen.push(f) } });
  assert.ok(seen.length >= 1, 'reported at least once');
  assert.ok(
    seen.every((f, i) => f >= 0 && f <= 1 && (i === 0 || f >= seen[i - 1])),
    seen.join(' '),
  );
  // The same row unwatched: watching changes nothing it computes.
  assert.equal(row.timeUs, simulateRow(cluster, cluster.accelerators, request).timeUs);
  assert.throws(
    () => simulateRow(cluster, cluster.accelerators, { ...request, watch: { deadlineMs: performance.now() - 1 } }),
    FlowBudgetExceeded,
  );
});

test('a walk whose pace says it would need more than twice the time left stops early and says how long it would take', () => {
  // A clock that moves 500 ms at every look: the pace is known after the walk's second check.
  const big = new TopologyGraph(buildPreset('hgx-h200', { nodes: 64, nicsPerNode: 8, nicGbps: 400, nicKind: 'ib' }));
  const ticking = () => {
    let now = 0;
    return () => {
      now += 500;
      return now;
    };
  };
  const row = { ...request, bytes: 512 * 2 ** 20, algorithm: 'tree' };
  let stopped: unknown;
  try {
    simulateRow(big, big.accelerators, { ...row, watch: { deadlineMs: 10_000, clock: ticking() } });
  } catch (err) {
    stopped = err;
  }
  assert.ok(stopped instanceof FlowBudgetExceeded, String(stopped));
  // Stopped a few checks in, a few percent of the way: the whole walk past the 10 s budget.
  assert.ok(stopped.predictedMs !== undefined && stopped.predictedMs > 10_000, String(stopped.predictedMs));
  // A walk on pace for its deadline runs to the end and answers what an unwatched walk does.
  const small = { ...request, bytes: 2 ** 20 };
  const paced = simulateRow(cluster, cluster.accelerators, { ...small, watch: { deadlineMs: 1e12, clock: ticking() } });
  assert.equal(paced.timeUs, simulateRow(cluster, cluster.accelerators, small).timeUs);
});

test('--mode auto answers a row past the flow budget with the analytical model and says so; --mode flow does not', async () => {
  const args = [
    'sim',
    '--topo',
    'dgx-h100',
    '--nodes',
    '16',
    '-b',
    '256M',
    '-e',
    '512M',
    '-f',
    '2',
    // Without in-switch reduction: NCCL's NVLS tree streams its flows at once, with no walk to budget.
    '--nvls',
    'off',
    '--format',
    'json',
  ];
  const auto = await runTsccl([...args, '--flow-budget', '0']);
  assert.equal(auto.code, 0, auto.stderr);
  const doc = JSON.parse(auto.stdout) as { modeNote: string | null; rows: { mode: string }[] };
  assert.match(
    doc.modeNote ?? '',
    /analytical model from the 268435456 B row on: the flow engine did not finish it within --flow-budget 0 s/,
  );
  assert.deepEqual(
    doc.rows.map((r) => r.mode),
    ['analytical', 'analytical'],
  );
  const flow = await runTsccl([...args, '--mode', 'flow', '--flow-budget', '0', '-b', '512M']);
  const flowDoc = JSON.parse(flow.stdout) as { modeNote: string | null; rows: { mode: string }[] };
  assert.equal(flowDoc.modeNote, null);
  assert.deepEqual(
    flowDoc.rows.map((r) => r.mode),
    ['flow'],
  );
});

test('--progress prints the flow engine’s progress on stderr and leaves the JSON on stdout whole', async () => {
  const out = await runTsccl([
    'sim',
    '--topo',
    'dgx-h100',
    '--nodes',
    '4',
    '-b',
    '256M',
    '-e',
    '256M',
    '--algo',
    'ring',
    '--progress',
    '--format',
    'json',
  ]);
  assert.equal(out.code, 0, out.stderr);
  assert.equal((JSON.parse(out.stdout) as { rows: unknown[] }).rows.length, 1);
  assert.match(out.stderr, /^# tsccl sim: row 1 of 1 \(268435456 B\): flow engine \d+% after [\d.]+ s$/m);
});
