import assert from 'node:assert/strict';
import { test } from 'node:test';
import { type ReplaySpan, afterFreeTime, replayTrace } from '../../src/sim/trace-replay.js';

// Traces in microseconds, built the way tsccl/train's StepTrace writes them.
const compute = (rank: number, ts: number, dur: number): ReplaySpan => ({
  ph: 'X',
  name: 'backward',
  cat: 'compute',
  pid: rank,
  ts,
  dur,
});
const wait = (rank: number, ts: number, dur: number): ReplaySpan => ({
  ph: 'X',
  name: 'gradients',
  cat: 'wait',
  pid: rank,
  ts,
  dur,
});
const call = (
  rank: number,
  ts: number,
  seq: number,
  options: { progress?: 'inline' | 'engine'; op?: string; count?: number; group?: string; comm?: string } = {},
): ReplaySpan => ({
  ph: 'X',
  name: options.op ?? 'allReduce',
  cat: `comm ${options.group ?? 'dp'}`,
  pid: rank,
  ts,
  dur: 1,
  args: {
    seq,
    comm: options.comm ?? 'world',
    size: 2,
    progress: options.progress ?? 'engine',
    count: options.count ?? 1024,
    dtype: 'float32',
  },
});
const priced =
  (us: number) =>
  (c: { op: string }): number | undefined =>
    c.op === 'allReduce' ? us : undefined;

test('on engines a wait lasts until the last call ends: the later rank’s issue, then the call’s predicted time', () => {
  // Rank 1 computes 300 us longer; both wait for one all-reduce priced at 100 us.
  const report = replayTrace(
    {
      traceEvents: [
        compute(0, 0, 1000),
        call(0, 1000, 1),
        wait(0, 1000, 450),
        compute(1, 0, 1300),
        call(1, 1300, 1),
        wait(1, 1300, 150),
      ],
    },
    priced(100),
  );
  assert.equal(report.progress, 'engine');
  assert.equal(report.calls, 1);
  assert.deepEqual(
    report.groups.map((g) => [g.group, g.rank, g.waits, g.measuredMs, g.predictedMs, g.peersMs]),
    [
      ['dp', 0, 1, 0.45, 0.4, 0.3],
      ['dp', 1, 1, 0.15, 0.1, 0],
    ],
  );
});

test('on engines calls overlap compute; inline, a call advances only while none of its ranks computes', () => {
  // Each rank issues a bucket at 200 us, computes until 1000, then waits; the call is priced 300 us.
  const spans = (progress: 'inline' | 'engine') => [
    compute(0, 0, 200),
    call(0, 200, 1, { progress }),
    compute(0, 250, 750),
    wait(0, 1000, 500),
    compute(1, 0, 200),
    call(1, 200, 1, { progress }),
    compute(1, 250, 750),
    wait(1, 1000, 500),
  ];
  const engine = replayTrace({ traceEvents: spans('engine') }, priced(300));
  assert.deepEqual(
    engine.groups.map((g) => g.predictedMs),
    [0, 0],
    'the call ended at 500 us, inside backward',
  );
  const inline = replayTrace({ traceEvents: spans('inline') }, priced(300));
  assert.equal(inline.progress, 'inline');
  // 50 us in the gap at 200-250, the other 250 us after backward ends at 1000.
  assert.deepEqual(
    inline.groups.map((g) => g.predictedMs),
    [0.25, 0.25],
  );
});

test('calls of one communicator run one after another; another communicator’s calls do not wait for them', () => {
  const traceEvents = [
    call(0, 0, 1),
    call(0, 0, 2),
    call(0, 0, 1, { comm: 'other', group: 'tp' }),
    wait(0, 0, 100),
    call(1, 0, 1),
    call(1, 0, 2),
    call(1, 0, 1, { comm: 'other', group: 'tp' }),
    wait(1, 0, 100),
  ];
  const report = replayTrace({ traceEvents }, priced(40));
  assert.equal(report.calls, 3);
  // The wait ends with the second call of world: 80 us; it is named by that call's group.
  assert.deepEqual(
    report.groups.map((g) => [g.group, g.predictedMs]),
    [
      ['dp', 0.08],
      ['dp', 0.08],
    ],
  );
});

test('a wait on a call that cannot be priced keeps its measured time, and says so; a wait after no collective is counted apart', () => {
  const traceEvents = [
    call(0, 0, 1, { op: 'mysteryOp' }),
    wait(0, 0, 70),
    wait(0, 200, 30),
    call(1, 0, 1, { op: 'mysteryOp' }),
    wait(1, 0, 70),
  ];
  const report = replayTrace({ traceEvents }, priced(10));
  assert.deepEqual(report.unpriced, { mysteryOp: 1 });
  assert.equal(report.otherWaits, 1);
  assert.deepEqual(
    report.groups.map((g) => [g.rank, g.measuredMs, g.predictedMs]),
    [
      [0, 0.07, 0.07],
      [1, 0.07, 0.07],
    ],
  );
});

const message = (rank: number, ts: number, dur: number, kind: 'send' | 'recv', groupRank: number, peer: number) => ({
  ph: 'X',
  name: `${kind} ${kind === 'send' ? 'to' : 'from'} ${peer}`,
  cat: 'comm pipeline',
  pid: rank,
  ts,
  dur,
  args: { seq: 1, peer, groupRank, comm: 'world.split0', size: 2, progress: 'engine', count: 256, dtype: 'float32' },
});

test('a pipeline’s receive waits for its sender’s compute and the message; the sender does not wait for its send', () => {
  // Stage 0 (world rank 4, group rank 0) computes until 100 us and sends; stage 1 (world rank 5)
  // waits from 0 for the receive. The message is priced at 30 us.
  const traceEvents = [
    compute(4, 0, 100),
    message(4, 100, 40, 'send', 0, 1),
    compute(4, 100, 200),
    wait(4, 300, 5),
    message(5, 0, 140, 'recv', 1, 0),
    { ...wait(5, 0, 141), name: 'recv from stage 0' },
  ];
  const asked: (readonly number[])[] = [];
  const report = replayTrace({ traceEvents }, (c) => {
    asked.push(c.ranks);
    return c.op === 'send' ? 30 : undefined;
  });
  assert.deepEqual(asked[0], [4, 5], 'priced between the world ranks that sent and received it');
  assert.equal(report.messages, 1);
  assert.equal(report.calls, 0);
  assert.deepEqual(
    report.groups.map((g) => [g.group, g.rank, g.measuredMs, g.predictedMs, g.peersMs]),
    [['pipeline', 5, 0.141, 0.13, 0.1]],
  );
  // Rank 4's later wait is not for its send, which had ended before it.
  assert.equal(report.otherWaits, 1);
});

test('free time skips every member’s compute, overlapping spans included', () => {
  const busy = new Map<number, [number, number][]>([
    [0, [[10, 20]]],
    [
      1,
      [
        [15, 30],
        [40, 50],
      ],
    ],
  ]);
  const members = [{ rank: 0 }, { rank: 1 }];
  assert.equal(afterFreeTime(0, 5, members, busy), 5);
  assert.equal(afterFreeTime(0, 11, members, busy), 31, '10 us before the first span, then the union 10-30');
  assert.equal(afterFreeTime(0, 25, members, busy), 55, '10 + 10 (30-40) + 5 after 50');
  assert.equal(afterFreeTime(35, 5, members, busy), 40);
});
