import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import type { ReplayReport } from '../../src/sim/trace-replay.js';
import type { TraceEvent } from '../../src/train/step-trace.js';
import { traceProfile } from '../../src/train/trace-profile.js';
import { runTsccl } from '../harness/cli.js';
import { trained } from './train-harness.js';

function traceOf(path: string): TraceEvent[] {
  return (JSON.parse(readFileSync(path, 'utf8')) as { traceEvents: TraceEvent[] }).traceEvents;
}

const trackNames = (events: TraceEvent[], pid: number) =>
  new Map(
    events
      .filter((e) => e.ph === 'M' && e.name === 'thread_name' && e.pid === pid)
      .map((e) => [e.tid, e.args?.name as string]),
  );

test('a trace of data-parallel steps: per rank, each layer forward and backward, the wait for gradients, and the all-reduces; tsccl sim train --trace replays it', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'tsccl-trace-'));
  try {
    const path = join(dir, 'trace.json');
    const results = await trained(2, { steps: 2, progress: 'engine', trace: path });
    assert.deepEqual(readdirSync(dir), ['trace.json'], 'the parts were merged and removed');
    const events = traceOf(path);
    for (const pid of [0, 1]) {
      const tracks = trackNames(events, pid);
      const on = (track: string) =>
        events.filter((e) => e.ph === 'X' && e.pid === pid && tracks.get(e.tid) === track).map((e) => e.name);
      const compute = on('compute');
      assert.equal(compute.filter((n) => n === 'forward embed').length, 2, `rank ${pid}: ${compute}`);
      assert.equal(compute.filter((n) => n === 'backward head').length, 2);
      assert.ok(compute.indexOf('backward head') < compute.indexOf('backward embed'), 'backward runs from the head');
      assert.deepEqual(on('wait'), ['gradients', 'gradients']);
      assert.ok(
        on('comm data').filter((n) => n === 'allReduce').length >= 4,
        `rank ${pid}: the loss's and the gradients' all-reduces`,
      );
      // A gradient bucket goes out after the compute span that filled it, so however early its
      // all-reduce ends, the replay sees the wait for gradients waiting for it.
      const buckets = results[pid].issued.filter((call) => call.count > 1);
      assert.ok(buckets.length >= 2, `rank ${pid}: a bucket a step`);
      for (const { atMs } of buckets)
        for (const c of events.filter((e) => e.ph === 'X' && e.pid === pid && e.cat === 'compute'))
          assert.ok(
            !(c.ts < atMs * 1000 && atMs * 1000 < c.ts + c.dur!),
            `rank ${pid}: a bucket issued inside ${c.name}`,
          );
    }
    // The simulator replays the same steps with its own price for each call.
    const replay = await runTsccl(['sim', 'train', '--trace', path, '--topo', 'local', '-g', '2', '--format', 'json']);
    assert.equal(replay.code, 0, replay.stderr);
    const report = JSON.parse(replay.stdout) as ReplayReport;
    assert.equal(report.progress, 'engine');
    assert.equal(report.ranks, 2);
    assert.deepEqual(report.unpriced, {});
    for (const pid of [0, 1]) {
      const g = report.groups.find((x) => x.rank === pid)!;
      assert.equal(g.group, 'data', `rank ${pid}: its waits are on the data-parallel calls`);
      assert.equal(g.waits, 2);
      const waited = events.filter((e) => e.ph === 'X' && e.pid === pid && e.cat === 'wait');
      assert.ok(Math.abs(g.measuredMs - waited.reduce((a, e) => a + e.dur! / 1000, 0)) < 1e-6);
      assert.ok(g.predictedMs >= g.peersMs && g.peersMs >= 0, `rank ${pid}: ${JSON.stringify(g)}`);
    }
    writeFileSync(path, JSON.stringify({ events: [] }));
    const bad = await runTsccl(['sim', 'train', '--trace', path, '--topo', 'local', '-g', '2']);
    assert.notEqual(bad.code, 0);
    assert.match(bad.stderr, /TSCCL_ERR_INVALID_ARGUMENT.*--trace .*traceEvents/);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('a trace of a pipeline of tensor-parallel stages: micro-batches, waits for the neighbour stage, and each group’s calls', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'tsccl-trace-'));
  try {
    const path = join(dir, 'trace.json');
    await trained(4, { steps: 1, tensor: 2, pipeline: 2, microBatches: 2, trace: path });
    const events = traceOf(path);
    for (const pid of [0, 1, 2, 3]) {
      const tracks = trackNames(events, pid);
      const on = (track: string) =>
        events.filter((e) => e.ph === 'X' && e.pid === pid && tracks.get(e.tid) === track).map((e) => e.name);
      assert.deepEqual(on('compute').sort(), ['B0', 'B1', 'F0', 'F1'], `rank ${pid}`);
      const stage = pid < 2 ? 0 : 1;
      assert.ok(
        on('wait').every((n) => n === `recv from stage ${1 - stage}`) && on('wait').length > 0,
        `rank ${pid}: ${on('wait')}`,
      );
      assert.ok(on('comm tensor').includes('allReduce'), `rank ${pid}: tensor-parallel all-reduces`);
      // The pipeline's sends and receives, each named by its peer in the pipeline group.
      const neighbour = 1 - stage;
      assert.ok(
        on('comm pipeline').includes(stage === 0 ? `send to ${neighbour}` : `recv from ${neighbour}`),
        `rank ${pid}: ${on('comm pipeline')}`,
      );
    }
    // The profile the page shows sums the same spans per rank: compute, waits, each group's calls.
    const profile = traceProfile({ traceEvents: events });
    assert.deepEqual(
      profile.map((r) => r.rank),
      [0, 1, 2, 3],
    );
    for (const r of profile) {
      const spans = events.filter((e) => e.ph === 'X' && e.pid === r.rank);
      const sum = (cat: string) => spans.filter((e) => e.cat === cat).reduce((a, e) => a + (e.dur ?? 0) / 1000, 0);
      assert.equal(r.computeMs, sum('compute'));
      assert.equal(r.waitMs, sum('wait'));
      assert.ok(r.computeMs > 0 && r.waitMs > 0, `rank ${r.rank}`);
      assert.ok(r.computeMs + r.waitMs <= r.wallMs + 1e-6, `rank ${r.rank}: compute and waits are sequential`);
      assert.equal(
        r.comms.find((c) => c.name === 'tensor')?.calls,
        spans.filter((e) => e.cat === 'comm tensor').length,
      );
    }
    // The replay matches each send with its receive, and each stage's waits are for them.
    const replay = await runTsccl(['sim', 'train', '--trace', path, '--topo', 'local', '-g', '4', '--format', 'json']);
    assert.equal(replay.code, 0, replay.stderr);
    const report = JSON.parse(replay.stdout) as ReplayReport;
    assert.equal(report.otherWaits, 0);
    const sends = events.filter((e) => e.ph === 'X' && e.cat === 'comm pipeline' && e.name.startsWith('send')).length;
    assert.equal(report.messages, sends, 'every message of the pipeline');
    for (const pid of [0, 1, 2, 3]) {
      const waited = events.filter((e) => e.ph === 'X' && e.pid === pid && e.cat === 'wait');
      const g = report.groups.filter((x) => x.rank === pid);
      assert.deepEqual(
        g.map((x) => x.group),
        ['pipeline'],
        `rank ${pid}: its waits are for the pipeline's messages`,
      );
      assert.equal(g[0].waits, waited.length);
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
