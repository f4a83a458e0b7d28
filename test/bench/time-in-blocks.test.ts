import assert from 'node:assert/strict';
import { test } from 'node:test';
import { blockMeansOverRanks, timeInBlocks } from '../../src/bench/time-in-blocks.js';
import { ErrorCode, TscclError, invalidArgument } from '../../src/errors.js';

/** One rank's side of the job: barriers counted, the block calls' agreement a no-op. */
function soloComm() {
  const comm = {
    barriers: 0,
    barrier: async () => {
      comm.barriers++;
    },
    allReduce: async () => {},
  };
  return comm;
}

test('blocks: calls take turns, each block starting with another call, every one after a barrier', async () => {
  const comm = soloComm();
  const log: string[] = [];
  // Each call busy for 100 us: a block of 20 ms holds about 200.
  const call = (name: string) => async () => {
    log.push(name);
    const end = performance.now() + 0.1;
    while (performance.now() < end);
  };
  const ended: number[] = [];
  const { times, callsPerBlock } = await timeInBlocks(comm, [call('a'), call('b')], {
    blocks: 3,
    minCalls: 2,
    warmupCalls: 40,
    afterBlock: (i) => ended.push(i),
  });
  assert.deepEqual(ended, [0, 1, 1, 0, 0, 1]);
  assert.equal(comm.barriers, 6);
  assert.equal(times.length, 2);
  for (const t of times) {
    assert.equal(t!.length, 3);
    for (const us of t!) assert.ok(us >= 0 && Number.isFinite(us));
  }
  for (const n of callsPerBlock) assert.ok(n >= 2 && n <= 200, `${n} calls per block`);
  // 1 checking call + 40 warm-up, then per block 1 untimed call after the switch + the block's calls.
  assert.equal(log.filter((n) => n === 'a').length, 1 + 40 + 3 * (1 + callsPerBlock[0]));
  for (const t of times) for (const us of t!) assert.ok(us >= 100, `${us} us per call`);
});

test('blocks: a slow call still runs its minimum calls per block', async () => {
  const slow = async () => {
    await new Promise((r) => setTimeout(r, 15));
  };
  const { times, callsPerBlock } = await timeInBlocks(soloComm(), [slow], { blocks: 1, minCalls: 3, warmupCalls: 4 });
  assert.deepEqual(callsPerBlock, [3]);
  assert.ok(times[0]![0] >= 14_000, `block mean ${times[0]![0]} us`);
});

test('blocks: a call refused as invalid is left out, as null; any other failure is thrown', async () => {
  const ok = async () => {};
  const refused = async () => {
    throw invalidArgument('message larger than the slot');
  };
  const { times, callsPerBlock } = await timeInBlocks(soloComm(), [refused, ok], {
    blocks: 2,
    minCalls: 1,
    warmupCalls: 1,
  });
  assert.equal(times[0], null);
  assert.equal(times[1]!.length, 2);
  assert.equal(callsPerBlock[0], 0);
  const broken = async () => {
    throw new TscclError(ErrorCode.PEER_LOST, 'peer 1 lost');
  };
  await assert.rejects(timeInBlocks(soloComm(), [broken], { blocks: 1, minCalls: 1, warmupCalls: 1 }), {
    code: ErrorCode.PEER_LOST,
  });
});

test('blocks: each block of a call averaged over the ranks; a refused call stays null', () => {
  const perRank = [
    [[10, 20], null],
    [[30, 40], null],
  ];
  assert.deepEqual(blockMeansOverRanks(perRank, 0), [20, 30]);
  assert.equal(blockMeansOverRanks(perRank, 1), null);
});

test('blocks: a job that settles first runs its first call back to back for that long, in whole rounds, before any warm-up', async () => {
  const log: string[] = [];
  const call = (name: string) => async () => {
    log.push(name);
    const end = performance.now() + 0.05;
    while (performance.now() < end);
  };
  const start = performance.now();
  await timeInBlocks(soloComm(), [call('a'), call('b')], { blocks: 1, minCalls: 1, warmupCalls: 4, settleMs: 30 });
  // Without the settle the job takes about a millisecond.
  assert.ok(performance.now() - start >= 30);
  // Each call is first run once (refused or not); then a settles, then a's 4 warm-up calls, then b's.
  const settling = log.indexOf('b', 2) - 2 - 4;
  assert.ok(settling >= 100 && settling % 100 === 0, `${settling} settling calls`);
});
