import assert from 'node:assert/strict';
import { test } from 'node:test';
import { ErrorCode, TscclError } from '../../src/errors.js';
import { withMarks } from '../harness/marks.js';
import { launchFixture, runFixture } from '../harness/ranks.js';

// Outcomes are asserted by code, message and order of events, never by how long they took: the
// machine may be loaded. A call that hung would end in a timeout, whose code the tests refuse.
type Outcome = { code: string; message?: string; ms: number };
const scenario = (name: string, n: number) =>
  withMarks(
    async (marks) =>
      (await runFixture('errors-rank', n, { scenario: name, marks })).results as Record<string, Outcome>[],
  );

test('bad input is refused on the calling rank before anything blocks, and names the argument', async () => {
  const results = await scenario('bad-input', 3);
  for (const [rank, out] of results.entries()) {
    for (const key of [
      'wrongDType',
      'avgOnInt',
      'unknownOp',
      'shortOutput',
      'outputTypeMismatch',
      'rootOutOfRange',
      'peerOutOfRange',
      'notTyped',
      'ambiguousUint16',
      'unevenBlocks',
      'unknownAlgorithm',
      'badTimeout',
      'freePlain',
      'freeTwice',
      'freeNothing',
      'scatterOutputType',
    ]) {
      assert.equal(out[key].code, ErrorCode.INVALID_ARGUMENT, `rank ${rank} ${key}: ${out[key].message}`);
    }
    assert.match(
      out.shortOutput.message!,
      new RegExp(`Rank ${rank}: output holds ${8 * 3 - 1} elements but allGather of count 8 needs 24`),
    );
    assert.match(out.rootOutOfRange.message!, /root 3 is out of range: expected an integer in \[0, 2\]/);
    assert.equal(out.freeOnce.code, 'OK');
    assert.match(out.freePlain.message!, /free takes an array from alloc .* is not in the arena/);
    assert.match(out.freeTwice.message!, /was freed already/);
    assert.match(out.freeNothing.message!, /buffer must be a typed array/);
    assert.match(
      out.scatterOutputType.message!,
      rank === 0 ? /does not split into/ : /output is a Uint8Array but the call's dtype is int64/,
    );
    assert.equal(out.preAborted.code, ErrorCode.ABORTED);
    assert.equal(out.afterwards.code, 'OK', out.afterwards.message); // the peers' all-reduce, waiting for this rank's turn, neither hung nor mismatched
    assert.equal(out.afterwardsValue.code, 'OK');
    assert.equal(out.useAfterDestroy.code, ErrorCode.DESTROYED);
  }
});

test('a rank that never arrives: the others time out, naming the operation, its sequence number and the missing rank', async () => {
  const results = await scenario('missing-rank', 4);
  for (const rank of [0, 1, 2]) {
    const o = results[rank].allReduce;
    assert.equal(o.code, ErrorCode.TIMEOUT);
    // Either this rank's own deadline passed, or a peer's passed first and ended this rank's wait.
    assert.match(
      o.message!,
      new RegExp(
        `allReduce #1 on rank ${rank} of world (timed out after \\d+ ms \\(timeout 800 ms\\): |ended: rank \\d gave up on world at #1 with TSCCL_ERR_TIMEOUT; )rank 3 did not arrive \\(rank 3 last seen at #0\\)`,
      ),
    );
    // Not before the deadline: the rank whose own deadline passed measured at least its timeout
    // (to the millisecond its timers round to).
    const own = /timed out after (\d+) ms/.exec(o.message!);
    if (own) assert.ok(Number(own[1]) >= 799, o.message);
  }
});

test('a split that some ranks never call times out naming the missing ranks', async () => {
  const results = await scenario('partial-split', 3);
  for (const rank of [1, 2]) {
    assert.equal(results[rank].split.code, ErrorCode.TIMEOUT);
    assert.match(results[rank].split.message!, /split #1 .* rank 0 did not arrive/);
  }
});

test('different counts on different ranks are reported as a mismatch, not a hang or corruption', async () => {
  const results = await scenario('count-mismatch', 2);
  const codes = results.map((o) => o.allReduce.code);
  assert.ok(codes.includes(ErrorCode.MISMATCH), `codes: ${codes.join(', ')}`);
  for (const o of results) {
    assert.notEqual(o.allReduce.code, 'OK');
    // A peer's failure must end the wait: it was not left to its (30 s) timeout.
    assert.notEqual(o.allReduce.code, ErrorCode.TIMEOUT, o.allReduce.message);
  }
  assert.match(
    results.find((o) => o.allReduce.code === ErrorCode.MISMATCH)!.allReduce.message!,
    /of 64 bytes|of 32 bytes/,
  );
});

test('different collectives on different ranks are reported, naming both sides', async () => {
  const results = await scenario('op-mismatch-then-barrier', 2);
  // Rank 1 meets the root's broadcast where it expected an all-reduce.
  assert.equal(results[1].call.code, ErrorCode.MISMATCH, JSON.stringify(results));
  assert.match(results[1].call.message!, /expected allReduce #1 .* from rank 0, but rank 0 sent broadcast #1/);
  // The root publishes and leaves, as MPI's eager sends do: if its broadcast ended, its next call
  // fails on rank 1's give-up, and no call waits out its timeout.
  const root = results[0];
  if (root.call.code === 'OK') {
    assert.notEqual(root.after.code, 'OK', JSON.stringify(root));
    assert.notEqual(root.after.code, ErrorCode.TIMEOUT, root.after.message);
  } else assert.equal(root.call.code, ErrorCode.MISMATCH, root.call.message);
});

test('over TCP, where small calls take the one-shot path: different counts, paths and collectives are mismatches, not hangs', async () => {
  const tcp = async (name: string) =>
    (await launchFixture('errors-rank', 2, { scenario: name })).results as Record<string, Outcome>[];
  // Both ranks one-shot: each reads the size the other declared.
  for (const [rank, o] of (await tcp('count-mismatch')).entries()) {
    assert.equal(o.allReduce.code, ErrorCode.MISMATCH, `rank ${rank}: ${o.allReduce.message}`);
    assert.match(
      o.allReduce.message!,
      rank === 0
        ? /expected allReduce #1 of 64 bytes from rank 1, but rank 1 sent allReduce #1 of 32 bytes/
        : /of 32 bytes from rank 0, but rank 0 sent allReduce #1 of 64 bytes/,
    );
  }
  // One rank one-shot, the other a schedule.
  for (const [rank, o] of (await tcp('path-mismatch')).entries()) {
    assert.equal(o.allReduce.code, ErrorCode.MISMATCH, `rank ${rank}: ${o.allReduce.message}`);
  }
  assert.match(
    (await tcp('path-mismatch'))[0].allReduce.message!,
    /of 4000 bytes from rank 1, but rank 1 sent allReduce #1 of 8000 bytes by another algorithm/,
  );
  // A one-shot broadcast whose ranks disagree on the root: the rank that needs data nobody sent says so.
  const roots = (await launchFixture('errors-rank', 3, { scenario: 'root-mismatch' })).results as Record<
    string,
    Outcome
  >[];
  assert.equal(roots[2].broadcast.code, ErrorCode.MISMATCH, roots[2].broadcast.message);
  assert.match(
    roots[2].broadcast.message!,
    /Rank 2 needs rank 1's data for broadcast, but rank 1 sent none: the ranks called different roots/,
  );
  // The same between thread ranks, where a reader waits for its root alone: rank 1 published the
  // call without data, and rank 2 says so rather than reading whatever its slot held before.
  const threadRoots = await scenario('root-mismatch', 3);
  assert.equal(threadRoots[2].broadcast.code, ErrorCode.MISMATCH, threadRoots[2].broadcast.message);
  assert.match(
    threadRoots[2].broadcast.message!,
    /Rank 2 needs rank 1's data for broadcast, but rank 1 sent none: the ranks called different roots/,
  );
  // A broadcast's root sends and is done; the one-shot all-reduce on the other rank names both sides.
  const ops = await tcp('op-mismatch');
  assert.equal(ops[1].call.code, ErrorCode.MISMATCH);
  assert.match(
    ops[1].call.message!,
    /expected allReduce #1 of 32 bytes from rank 0, but rank 0 sent broadcast #1 of 32 bytes by another algorithm/,
  );
});

test('an AbortSignal ends a pending call with TSCCL_ERR_ABORTED', async () => {
  const results = await scenario('signal-abort', 2);
  assert.equal(results[0].allReduce.code, ErrorCode.ABORTED);
  assert.match(results[0].allReduce.message!, /aborted by its signal: Error: user gave up/);
  // The peer stayed away until this call had ended, so only the signal can have ended it.
});

test('a rank that throws fails the job fast: the others end with PEER_LOST, run() names the rank', async () => {
  // PEER_LOST, not the 30 s timeout of their call: the failure, not a deadline, ended the wait.
  await assert.rejects(scenario('rank-throws', 3), (err: unknown) => {
    assert.ok(err instanceof TscclError);
    assert.equal(err.code, ErrorCode.RANK_FAILED);
    assert.match(err.message, /^Rank 1 failed: rank 1 broke on purpose/);
    const ranks = err.details.ranks as { rank: number; ok: boolean; result?: Record<string, Outcome> }[];
    for (const r of [0, 2])
      assert.equal(
        ranks[r].result?.allReduce.code ?? (ranks[r] as { error?: TscclError }).error?.code,
        ErrorCode.PEER_LOST,
      );
    return true;
  });
});
