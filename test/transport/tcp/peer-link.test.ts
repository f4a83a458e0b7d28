import assert from 'node:assert/strict';
import { test } from 'node:test';
import { ErrorCode, TscclError } from '../../../src/errors.js';
import { LinkState, PeerLink } from '../../../src/transport/tcp/peer-link.js';

const link = () => new PeerLink(1, { connections: [], sameMachine: true, resendWindowBytes: 0 });
const lost = (why: string) => new TscclError(ErrorCode.PEER_LOST, why);
/** Read through a call: an assertion on the field would narrow it for the rest of the test. */
const errorOf = (l: PeerLink) => l.error;

test('a link only moves forward: a goodbye then a break is Left, a break then a goodbye is Left, the first error stays', () => {
  const leaving = link();
  leaving.goodbye();
  assert.equal(leaving.state, LinkState.Leaving);
  assert.ok(leaving.saidGoodbye && !leaving.broken && errorOf(leaving) === undefined);
  leaving.down(lost('first'));
  leaving.down(lost('second'));
  assert.equal(leaving.state, LinkState.Left);
  assert.equal(errorOf(leaving)?.message, 'first');

  const broken = link();
  broken.down(lost('cut'));
  assert.equal(broken.state, LinkState.Broken);
  assert.ok(broken.broken && !broken.saidGoodbye);
  broken.goodbye();
  assert.equal(broken.state, LinkState.Left);
  assert.ok(!broken.broken && broken.saidGoodbye);
});

test('seqs heard from a peer only move forward, across the int32 wrap too', () => {
  const l = link();
  l.heardSeq(5);
  l.heardSeq(3);
  assert.equal(l.lastSeq, 5);
  l.lastSeq = 0x7fffffff;
  l.heardSeq(-0x80000000);
  assert.equal(l.lastSeq, -0x80000000);
});

test('send tickets complete in order, also when their writes finish out of order', () => {
  const l = link();
  l.finish(2);
  assert.equal(l.written, 0);
  l.finish(1);
  assert.equal(l.written, 2);
  l.finish(3);
  assert.equal(l.written, 3);
});
