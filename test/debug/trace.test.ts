import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { test } from 'node:test';
import type { RankDump } from '../../src/debug/flight-recorder.js';
import { analyzeTraces, formatVerdicts } from '../../src/debug/trace-analysis.js';
import { runFixture } from '../harness/ranks.js';

const op = (
  seq: number,
  opName: string,
  state: 'done' | 'running' | 'failed',
  extra: Partial<{ dtype: string; count: number }> = {},
) => ({
  seq,
  op: opName,
  dtype: extra.dtype ?? 'float32',
  count: extra.count ?? 8,
  root: 0,
  redop: 'sum',
  state,
  queuedAt: 0,
});
const dump = (rank: number, records: ReturnType<typeof op>[]): RankDump => ({
  rank,
  reason: 'test',
  time: '',
  comms: [{ name: 'world', rank, size: 3, records }],
});

test('trace analysis names the first divergence and who never arrived', () => {
  const [v] = analyzeTraces([
    dump(0, [op(1, 'allReduce', 'done'), op(2, 'allReduce', 'running', { count: 16 })]),
    dump(1, [op(1, 'allReduce', 'done'), op(2, 'allReduce', 'running', { count: 8 })]),
  ]);
  assert.deepEqual(v.ranksSeen, [0, 1]);
  assert.equal(v.divergence?.seq, 2);
  assert.deepEqual(
    v.divergence?.calls.map((c) => c.call),
    ['allReduce(float32, count 16, sum)', 'allReduce(float32, count 8, sum)'],
  );
  assert.equal(v.stuck?.seq, 2);
  assert.deepEqual(v.stuck?.neverArrived, [2]);
  assert.deepEqual(v.stuck?.unfinished, [0, 1]);
});

test('a hang leaves flight records on each waiting rank, and tsccl trace says who never arrived', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'tsccl-trace-test-'));
  try {
    const { results } = await runFixture(
      'trace-rank',
      3,
      {},
      { env: { ...process.env, TSCCL_TRACE_DIR: dir, TSCCL_DEBUG: 'NONE' } },
    );
    assert.deepEqual(results, ['TSCCL_ERR_TIMEOUT', 'TSCCL_ERR_TIMEOUT', 'stopped']);
    assert.deepEqual(readdirSync(dir).sort(), ['rank-0.json', 'rank-1.json']);
    const bin = fileURLToPath(new URL('../../../bin/tsccl.js', import.meta.url));
    const text = execFileSync(process.execPath, [bin, 'trace', dir]).toString();
    assert.match(text, /communicator world \(3 ranks; records from ranks 0, 1\)/);
    assert.match(
      text,
      /stuck at #3 reduce\(float64, count 4, max, root 1\): ranks 2 never arrived; ranks 0, 1 did not finish/,
    );
    const json = JSON.parse(execFileSync(process.execPath, [bin, 'trace', dir, '--format', 'json']).toString()) as {
      communicators: { stuck: { neverArrived: number[] } }[];
    };
    assert.deepEqual(json.communicators[0].stuck.neverArrived, [2]);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('sends and receives are in the flight records: tsccl trace names who waits on which peer, apart from the collectives', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'tsccl-trace-test-'));
  try {
    const { results } = await runFixture(
      'p2p-trace-rank',
      3,
      {},
      { env: { ...process.env, TSCCL_TRACE_DIR: dir, TSCCL_DEBUG: 'NONE' } },
    );
    assert.deepEqual(results, ['TSCCL_ERR_TIMEOUT', 'TSCCL_ERR_TIMEOUT', 'stopped']);
    const bin = fileURLToPath(new URL('../../../bin/tsccl.js', import.meta.url));
    const text = execFileSync(process.execPath, [bin, 'trace', dir]).toString();
    assert.match(text, /rank 0: send\(float32, count 4, to 1, #1 with that peer\) failed/);
    assert.match(text, /rank 1: recv\(float32, count 16, from 2, #1 with that peer\) failed/);
    // The all-reduce before them finished everywhere: no collective is named as stuck or diverged.
    assert.doesNotMatch(text, /stuck at|diverged/);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('the flight recorder keeps the last N calls, oldest first', async () => {
  const { FlightRecorder } = await import('../../src/debug/flight-recorder.js');
  const recorder = new FlightRecorder('ring-test', 0, 1, 3);
  for (let seq = 1; seq <= 5; seq++)
    recorder.record({ seq, op: 'barrier', dtype: 'uint8', count: 0, root: 0, redop: 'none' });
  assert.deepEqual(
    recorder.snapshot().records.map((r) => r.seq),
    [3, 4, 5],
  );
  recorder.retire();
});

test('a flight record gives the times an operation reached and none it has not, also once its place is reused', async () => {
  const { FlightRecorder } = await import('../../src/debug/flight-recorder.js');
  const recorder = new FlightRecorder('times-test', 0, 1, 1);
  const entry = { seq: 1, op: 'barrier', dtype: 'uint8', count: 0, root: 0, redop: 'none' };
  const first = recorder.record(entry);
  let [record] = recorder.snapshot().records;
  assert.equal(typeof record.queuedAt, 'number');
  assert.ok('startedAt' in record && 'endedAt' in record, 'the fields are there');
  assert.equal(record.startedAt, undefined, 'not started yet');
  assert.equal(record.endedAt, undefined, 'not ended yet');
  first.startedAt = record.queuedAt + 1;
  first.endedAt = record.queuedAt + 2;
  first.state = 'done';
  [record] = recorder.snapshot().records;
  assert.deepEqual([record.startedAt, record.endedAt], [record.queuedAt + 1, record.queuedAt + 2]);
  assert.equal(JSON.parse(JSON.stringify(record)).endedAt, record.endedAt);
  const second = recorder.record({ ...entry, seq: 2 });
  assert.equal(second, first, "the finished record's object is reused");
  [record] = recorder.snapshot().records;
  assert.deepEqual([record.seq, record.startedAt, record.endedAt], [2, undefined, undefined]);
  assert.equal(JSON.stringify(record).includes('NaN') || JSON.stringify(record).includes('null'), false);
  recorder.retire();
});

test("flight records carry what each rank's links recovered from, and tsccl trace says so per link", async () => {
  const { FlightRecorder } = await import('../../src/debug/flight-recorder.js');
  const recorder = new FlightRecorder('world', 1, 2, 4);
  recorder.record({ seq: 1, op: 'allReduce', dtype: 'float32', count: 4, root: 0, redop: 'sum' });
  assert.equal(recorder.snapshot().recoveries, undefined, 'nothing to report: no field');
  recorder.recoveriesFrom(() => [
    {
      rank: 0,
      corrupted: 3,
      requested: 4,
      recovered: 3,
      resent: 1,
      garbled: 1,
      reconnects: 2,
      failovers: 1,
      failbacks: 1,
    },
  ]);
  const comm = recorder.snapshot();
  recorder.retire();
  const [v] = analyzeTraces([{ rank: 1, reason: 'test', time: '', comms: [comm] }]);
  assert.deepEqual(v.recovered, [
    { rank: 1, peer: 0, corrupted: 3, recovered: 3, resent: 1, reconnects: 2, failovers: 1, failbacks: 1 },
  ]);
  assert.match(
    formatVerdicts([v]),
    /rank 1, link to rank 0: 3 frames came corrupted, 3 came again intact; sent 1 again; 2 socket\(s\) broke and were re-established, 1 over another path \(1 moved back to its own once it answered again\)/,
  );
});

test('tsccl trace names the collectives a rank ran again over new connections (operation retry)', async () => {
  const { FlightRecorder } = await import('../../src/debug/flight-recorder.js');
  const recorder = new FlightRecorder('world', 0, 2, 4);
  recorder.record({ seq: 1, op: 'allReduce', dtype: 'float32', count: 4, root: 0, redop: 'sum' }).state = 'done';
  const retried = recorder.record({ seq: 2, op: 'allReduce', dtype: 'float32', count: 8, root: 0, redop: 'sum' });
  retried.state = 'done';
  retried.retries = 1;
  const comm = recorder.snapshot();
  recorder.retire();
  const [v] = analyzeTraces([{ rank: 0, reason: 'test', time: '', comms: [comm] }]);
  assert.deepEqual(v.retried, [{ rank: 0, seq: 2, call: 'allReduce(float32, count 8, sum)', retries: 1 }]);
  assert.match(
    formatVerdicts([v]),
    /rank 0: #2 allReduce\(float32, count 8, sum\) failed and was run again 1 time\(s\)/,
  );
});
