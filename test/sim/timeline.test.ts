import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { chromeTrace } from '../../src/sim/chrome-trace.js';
import { collectiveTimeline } from '../../src/sim/timeline.js';
import { buildPreset } from '../../src/topology/presets/presets.js';
import { TopologyGraph } from '../../src/topology/topology-graph.js';
import { runTsccl } from '../harness/cli.js';

const dgx = new TopologyGraph(buildPreset('dgx-h100'));

test('an 8-rank ring all-reduce runs 2(n-1) = 14 steps on every rank: 7 receive-and-reduce from the left neighbour, then 7 receives', () => {
  const t = collectiveTimeline(dgx, dgx.accelerators, {
    op: 'all_reduce',
    bytes: 64 * 2 ** 20,
    algorithm: 'ring',
    nvls: false,
    root: 0,
  });
  assert.equal(t.algorithm, 'ring');
  assert.equal(t.ranks, 8);
  for (let rank = 0; rank < 8; rank++) {
    const steps = t.steps.filter((s) => s.rank === rank);
    assert.equal(steps.length, 14, `rank ${rank}`);
    const closing = steps.map((s) => s.ops[s.ops.length - 1]);
    assert.deepEqual(
      closing.map((op) => op.kind),
      [...Array(7).fill('recvReduce'), ...Array(7).fill('recv')],
    );
    assert.ok(closing.every((op) => op.peer === (rank + 7) % 8));
    assert.ok(steps.every((s) => s.ops[0].kind === 'send' && s.ops[0].peer === (rank + 1) % 8));
    // Steps follow one another, and the last ends within the predicted call time.
    for (let k = 1; k < steps.length; k++) assert.ok(steps[k].startUs >= steps[k - 1].endUs - 1e-9);
    assert.ok(steps[13].endUs <= t.timeUs);
    // Each step moves an eighth of the 16 Mi elements.
    assert.ok(closing.every((op) => op.count === 2 ** 21));
  }
  assert.equal(t.bottleneck, t.links[0].link);
  for (const link of t.links) {
    assert.ok(link.utilisation > 0 && link.utilisation <= 1 + 1e-9, `${link.link} ${link.utilisation}`);
    assert.ok(link.points.every(([, u]) => u >= 0 && u <= 1 + 1e-9));
  }
  const trace = chromeTrace(t);
  assert.equal(trace.traceEvents.filter((e) => e.ph === 'X').length, t.steps.length);
  assert.ok(trace.traceEvents.some((e) => e.ph === 'C' && e.name === t.bottleneck));
});

test('the timeline refuses what has no step-by-step schedule, and a channel the call does not run, naming the argument', () => {
  const request = { op: 'all_reduce' as const, bytes: 2 ** 20, nvls: true, root: 0 };
  // Left to choose, it shows the fastest schedule, where NVLS would be faster still.
  assert.equal(collectiveTimeline(dgx, dgx.accelerators, request).algorithm, 'ring');
  assert.throws(() => collectiveTimeline(dgx, dgx.accelerators, { ...request, algorithm: 'nvls' }), {
    code: 'TSCCL_ERR_INVALID_ARGUMENT',
    details: { argument: '--algo' },
  });
  assert.throws(() => collectiveTimeline(dgx, dgx.accelerators, { ...request, algorithm: 'ring', channel: 99 }), {
    code: 'TSCCL_ERR_INVALID_ARGUMENT',
    details: { argument: '--channel' },
  });
  assert.throws(() => collectiveTimeline(dgx, dgx.accelerators, { ...request, bytes: 0 }), {
    code: 'TSCCL_ERR_INVALID_ARGUMENT',
    details: { argument: '--size' },
  });
  assert.throws(() => collectiveTimeline(dgx, dgx.accelerators, { ...request, op: 'sendrecv' }), {
    code: 'TSCCL_ERR_INVALID_ARGUMENT',
    details: { argument: '--op' },
  });
});

test('tsccl sim timeline prints each rank’s steps, and writes the JSON and a Chrome trace of the same call', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'tsccl-timeline-'));
  try {
    const tracePath = join(dir, 'ring.json');
    const text = await runTsccl([
      'sim',
      'timeline',
      '--topo',
      'dgx-h100',
      '--algo',
      'ring',
      '--chrome-trace',
      tracePath,
    ]);
    assert.equal(text.code, 0, text.stderr);
    assert.match(text.stdout, /ring \w+, predicted [\d.]+ us; channel 0 of 1/);
    assert.equal((text.stdout.match(/^ {2}rank +\d+: 14 steps/gm) ?? []).length, 8);
    const json = await runTsccl(['sim', 'timeline', '--topo', 'dgx-h100', '--algo', 'ring', '--format', 'json']);
    const doc = JSON.parse(json.stdout) as { steps: unknown[]; bottleneck: string };
    assert.equal(doc.steps.length, 8 * 14);
    const trace = JSON.parse(readFileSync(tracePath, 'utf8')) as { traceEvents: { ph: string; name: string }[] };
    assert.equal(trace.traceEvents.filter((e) => e.ph === 'X').length, doc.steps.length);
    assert.ok(trace.traceEvents.some((e) => e.ph === 'C' && e.name === doc.bottleneck));
    const refused = await runTsccl(['sim', 'timeline', '--topo', 'dgx-h100', '--algo', 'nvls']);
    assert.equal(refused.code, 1);
    assert.match(refused.stderr, /TSCCL_ERR_INVALID_ARGUMENT: nvls runs no step-by-step schedule/);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
