import assert from 'node:assert/strict';
import { test } from 'node:test';
import { planCall } from '../../src/comm/call-plan.js';
import { retryVeto } from '../../src/comm/operation-retry.js';
import { dtypeInfo } from '../../src/dtypes/dtype.js';
import { ErrorCode, TscclError } from '../../src/errors.js';
import { planRequest } from '../harness/plan-request.js';

const site = { rank: 0, size: 3, hosts: undefined };
const allReduce = (input: Float32Array, output: Float32Array | undefined) =>
  planCall(
    planRequest({
      collective: 'allReduce',
      dtype: dtypeInfo('float32'),
      count: 8,
      root: 0,
      input,
      output,
      algorithm: undefined,
    }),
    site,
  );
const lost = (how: string) => new TscclError(ErrorCode.PEER_LOST, 'link lost', { lost: how, peer: 1 });
const free = { saved: false, pointToPointBusy: false, leftMs: 1000 };

test('retryVeto: an in-place call gives its own reason whichever way the peer was lost', () => {
  const plan = allReduce(new Float32Array(8), undefined);
  for (const how of ['process-gone', 'silent', 'reset']) {
    assert.match(retryVeto(plan, lost(how), free) ?? '', /^its allReduce is in place/, how);
  }
  assert.equal(retryVeto(plan, lost('reset'), { ...free, saved: true }), undefined);
  assert.equal(retryVeto(plan, lost('process-gone'), { ...free, saved: true }), "rank 1's process is gone");
});

test('retryVeto: an out-of-place call is vetoed by a peer gone, busy point-to-point, or time up, in that order', () => {
  const plan = allReduce(new Float32Array(8), new Float32Array(8));
  assert.equal(retryVeto(plan, lost('reset'), free), undefined);
  assert.equal(retryVeto(plan, lost('process-gone'), { ...free, leftMs: 0 }), "rank 1's process is gone");
  assert.match(retryVeto(plan, lost('silent'), free) ?? '', /^rank 1 fell silent/);
  assert.match(
    retryVeto(plan, lost('reset'), { ...free, pointToPointBusy: true, leftMs: 0 }) ?? '',
    /^sends or receives/,
  );
  assert.equal(retryVeto(plan, lost('reset'), { ...free, leftMs: 0 }), "the call's time is up");
});
