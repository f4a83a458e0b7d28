import assert from 'node:assert/strict';
import type { Socket } from 'node:net';
import { test } from 'node:test';
import { ErrorCode, TscclError } from '../../../src/errors.js';
import { Intake } from '../../../src/transport/tcp/intake.js';
import { LinkState, PeerLink } from '../../../src/transport/tcp/peer-link.js';
import { holdsAnyValue } from '../../harness/v8-shapes.js';

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

test('reads counted on a socket become the time it was last heard at the next refresh; a socket not read keeps its time', () => {
  const sockets = [0, 1].map(() => ({ socket: {} as Socket, intake: new Intake() }));
  const twoLanes = new PeerLink(1, { connections: sockets, sameMachine: true, resendWindowBytes: 0 });
  twoLanes.refreshHeard(1e9);
  const [lane0, lane1, last] = [twoLanes.laneHeard[0], twoLanes.laneHeard[1], twoLanes.lastHeard];
  assert.ok(lane0 < 1e9 && lane1 < 1e9 && last < 1e9, 'nothing read yet: the times stay');
  twoLanes.laneReads[1]++;
  twoLanes.refreshHeard(2e9);
  assert.deepEqual([twoLanes.laneHeard[0], twoLanes.laneHeard[1], twoLanes.lastHeard], [lane0, 2e9, 2e9]);
  twoLanes.refreshHeard(3e9);
  assert.deepEqual([twoLanes.laneHeard[1], twoLanes.lastHeard], [2e9, 2e9], 'no read since: heard at the last refresh');
  twoLanes.laneReads[0] += 5;
  twoLanes.refreshHeard(4e9);
  assert.deepEqual([twoLanes.laneHeard[0], twoLanes.laneHeard[1], twoLanes.lastHeard], [4e9, 2e9, 4e9]);
});

test("a link's waits to wake start in the array kind that holds functions, as the warm-up's links' do", () => {
  assert.ok(holdsAnyValue(link().wakers));
});
