import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { CommBackend } from '../../src/comm/backend.js';
import { CommunicatorScope } from '../../src/comm/comm-scope.js';
import { FailurePolicy } from '../../src/comm/failure-policy.js';
import { ErrorCode, TscclError } from '../../src/errors.js';
import { sameShape } from '../harness/v8-shapes.js';

/** A backend of which a scope reads its spin settings, status board and lost ranks. */
function backend(lost: number | undefined): CommBackend {
  return {
    spinMs: 0.05,
    spinYields: false,
    status: { name: `board ${lost}` },
    lostRank: () => lost,
  } as unknown as CommBackend;
}

function scope(name: string, of: CommBackend): CommunicatorScope {
  return new CommunicatorScope(of, new FailurePolicy({ name, rank: 0, backend: of }), { rank: 0, commName: name });
}

test("two communicators' scopes have one shape and the same functions, so a call context's calls of them have one target", () => {
  const warmUp = scope('world.warmup', backend(undefined));
  const world = scope('world', backend(undefined));
  assert.ok(sameShape(warmUp, world));
  assert.equal(warmUp.localAbort, world.localAbort);
  assert.equal(warmUp.lostRank, world.lostRank);
});

test("a scope reads its communicator's current backend and failure", () => {
  const first = backend(undefined);
  const failures = new FailurePolicy({ name: 'world', rank: 0, backend: first });
  const s = new CommunicatorScope(first, failures, { rank: 0, commName: 'world' });
  assert.equal(s.status, first.status);
  assert.equal(s.lostRank(3), undefined);
  assert.equal(s.localAbort(), undefined);
  const replacement = backend(1);
  s.backend = replacement;
  assert.equal(s.status, replacement.status);
  assert.equal(s.lostRank(3), 1);
  failures.failure = new TscclError(ErrorCode.ABORTED, 'aborted', { rank: 0 });
  assert.equal(s.localAbort(), failures.failure);
});
