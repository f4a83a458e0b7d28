import assert from 'node:assert/strict';
import { test } from 'node:test';
import { type CommScope, OpContext } from '../../src/comm/op-context.js';
import { epochMs } from '../../src/debug/epoch-clock.js';
import { ErrorCode } from '../../src/errors.js';

/** A scope whose rank 1 gave up on the communicator at call #3, before ending call #4. */
function scopeWithFailedPeer(): CommScope {
  return {
    rank: 0,
    commName: 'world',
    status: {
      failedBefore: () => ({ rank: 1, code: ErrorCode.TIMEOUT, seq: 3 }),
    } as unknown as CommScope['status'],
    lostRank: () => undefined,
    localAbort: () => undefined,
    spinMs: 0,
    spinYields: false,
  };
}

const call = { op: 'allReduce', seq: 4, timeoutMs: 30_000, signal: undefined, collective: true, participants: [0, 1] };

test("endReads fails a call whose peer gave up, as what it read in place may be that peer's reclaimed memory", () => {
  const ctx = new OpContext(scopeWithFailedPeer(), call);
  assert.throws(() => ctx.endReads(), {
    code: ErrorCode.TIMEOUT,
    message: /allReduce #4 on rank 0 of world ended: rank 1 gave up on world at #3/,
  });
});

test('a call that read only copies in shared slots has nothing for endReads to guard', () => {
  const ctx = new OpContext(scopeWithFailedPeer(), call);
  ctx.readNoPeerMemory();
  assert.doesNotThrow(() => ctx.endReads());
});

test("a renewed context is its new call's: it names that call, its deadline counts from the renewal, and endReads guards again", () => {
  const ctx = new OpContext(scopeWithFailedPeer(), call);
  ctx.readNoPeerMemory();
  ctx.renew('broadcast', 9, 1, undefined, epochMs());
  assert.throws(() => ctx.endReads(), { message: /broadcast #9 on rank 0 of world ended: rank 1 gave up/ });
  const healthy: CommScope = {
    ...scopeWithFailedPeer(),
    status: { failedBefore: () => undefined, lastSeenSeq: () => 9 } as unknown as CommScope['status'],
  };
  const renewedAt = epochMs();
  const renewed = new OpContext(healthy, call).renew('broadcast', 9, 1, undefined, renewedAt);
  while (epochMs() - renewedAt < 2) {}
  assert.throws(() => renewed.check(), {
    code: ErrorCode.TIMEOUT,
    message: /broadcast #9 .*timed out after \d+ ms \(timeout 1 ms\)/,
  });
  // Every rank arrived and not one step moved: both causes are named, arguments and links.
  assert.throws(() => renewed.check(), {
    message:
      /every rank arrived, but the data did not flow \(0 of its steps done on this rank\): the ranks called it with different arguments \(count, dtype, root\), or a link between them stopped carrying data/,
  });
  // Renewed with a long timeout, the same context is in time again.
  renewed.renew('allReduce', 10, 30_000, undefined, epochMs());
  assert.doesNotThrow(() => renewed.check());
});
