import assert from 'node:assert/strict';
import { test } from 'node:test';
import { StepList, slice } from '../../src/algorithms/schedule.js';
import { sameShape } from '../harness/v8-shapes.js';

test('recv and recvReduce steps have one shape, so the executor code that takes both sees one', () => {
  const list = new StepList();
  list.recv(1, slice('output', 0, 4));
  list.recvReduce(1, slice('output', 4, 4), slice('input', 4, 4));
  list.recvAlways(1, slice('output', 0, 0));
  const [recv, recvReduce, empty] = list.steps;
  assert.deepEqual([recv.kind, recvReduce.kind, empty.kind], ['recv', 'recvReduce', 'recv']);
  assert.equal((recv as { src?: unknown }).src, undefined);
  assert.ok(sameShape(recv, recvReduce));
  assert.ok(sameShape(empty, recvReduce));
});

test('empty transfers are left out unless they must happen', () => {
  const list = new StepList();
  list.send(1, slice('input', 0, 0));
  list.recv(1, slice('output', 0, 0));
  list.recvReduce(1, slice('output', 0, 0), slice('input', 0, 0));
  assert.equal(list.steps.length, 0);
  list.sendAlways(1, slice('input', 0, 0));
  list.recvAlways(1, slice('output', 0, 0));
  assert.deepEqual(
    list.steps.map((s) => s.kind),
    ['send', 'recv'],
  );
});
