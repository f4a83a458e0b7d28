import assert from 'node:assert/strict';
import { test } from 'node:test';
import { dtypeInfo } from '../../src/dtypes/dtype.js';
import { ErrorCode, TscclError } from '../../src/errors.js';
import { type PlanRequest, callViews, planCall } from '../../src/comm/call-plan.js';
import { PlanMemo } from '../../src/comm/plan-memo.js';
import { planRequest } from '../harness/plan-request.js';

const site = { rank: 1, size: 4, hosts: undefined };
const f32 = dtypeInfo('float32');
const refused = (f: () => unknown, message: RegExp) =>
  assert.throws(
    f,
    (err: unknown) => err instanceof TscclError && err.code === ErrorCode.INVALID_ARGUMENT && message.test(err.message),
  );

test('planCall: an out-of-place all-reduce keeps its arrays, op and shape', () => {
  const input = new Float32Array(8);
  const output = new Float32Array(8);
  const plan = planCall(
    planRequest({
      collective: 'allReduce',
      dtype: f32,
      op: 'max',
      count: 8,
      root: 0,
      input,
      output,
      algorithm: 'ring',
    }),
    site,
  );
  assert.equal(plan.op, 'max');
  assert.equal(plan.output, output);
  assert.equal(plan.input, input);
  assert.deepEqual(plan.shape, {
    collective: 'allReduce',
    nranks: 4,
    count: 8,
    root: 0,
    inPlace: false,
    chunkCount: 0,
  });
  assert.equal(plan.algorithm, 'ring');
});

test('planCall: in place when output is absent or the input itself; hosts go into the shape', () => {
  const input = new Float32Array(8);
  assert.equal(
    planCall(
      planRequest({
        collective: 'allReduce',
        dtype: f32,
        count: 8,
        root: 0,
        input,
        output: input,
        algorithm: undefined,
      }),
      site,
    ).output,
    undefined,
  );
  const plan = planCall(
    planRequest({
      collective: 'allGather',
      dtype: f32,
      count: 2,
      root: 0,
      input,
      output: undefined,
      algorithm: undefined,
    }),
    { ...site, hosts: [0, 0, 1, 1] },
  );
  assert.equal(plan.shape.inPlace, true);
  assert.equal(plan.op, 'sum');
  assert.deepEqual(plan.shape.hosts, [0, 0, 1, 1]);
});

test('planCall refuses short buffers, a mismatched output type, an unknown op and avg on integers, naming the argument', () => {
  const input = new Float32Array(8);
  refused(
    () =>
      planCall(
        planRequest({
          collective: 'allGather',
          dtype: f32,
          count: 8,
          root: 0,
          input,
          output: new Float32Array(31),
          algorithm: undefined,
        }),
        site,
      ),
    /Rank 1: output holds 31 elements but allGather of count 8 needs 32/,
  );
  refused(
    () =>
      planCall(
        planRequest({
          collective: 'allGather',
          dtype: f32,
          count: 4,
          root: 0,
          input,
          output: undefined,
          algorithm: undefined,
        }),
        site,
      ),
    /buffer holds 8 elements but in-place allGather of 4 elements per block needs 16/,
  );
  refused(
    () =>
      planCall(
        planRequest({
          collective: 'allReduce',
          dtype: f32,
          count: 8,
          root: 0,
          input,
          output: new Float64Array(8),
          algorithm: undefined,
        }),
        site,
      ),
    /output is a Float64Array but the call's dtype is float32/,
  );
  refused(
    () =>
      planCall(
        planRequest({
          collective: 'allReduce',
          dtype: f32,
          op: 'xor',
          count: 8,
          root: 0,
          input,
          output: undefined,
          algorithm: undefined,
        }),
        site,
      ),
    /Unknown op 'xor'/,
  );
  refused(
    () =>
      planCall(
        planRequest({
          collective: 'allReduce',
          dtype: dtypeInfo('int32'),
          op: 'avg',
          count: 8,
          root: 0,
          input: new Int32Array(8),
          output: undefined,
          algorithm: undefined,
        }),
        site,
      ),
    /avg' needs a floating dtype/,
  );
});

test('PlanMemo reuses the last plan while the arguments repeat, and plans again when one changes', () => {
  const memo = new PlanMemo(site);
  const input = new Float32Array(8);
  const allReduce: PlanRequest = {
    collective: 'allReduce',
    dtype: f32,
    op: 'sum',
    count: 8,
    root: 0,
    input,
    output: undefined,
    algorithm: undefined,
    compression: undefined,
    variable: undefined,
  };
  const first = memo.plan(allReduce);
  assert.equal(memo.plan({ ...allReduce }), first);
  assert.notEqual(memo.plan({ ...allReduce, op: 'max' }), first);
  assert.notEqual(memo.plan({ ...allReduce, input: new Float32Array(8) }), first);
  assert.notEqual(memo.plan({ ...allReduce, output: new Float32Array(8) }), memo.plan(allReduce));
  const variable = {
    ...allReduce,
    collective: 'allToAll',
    count: 0,
    output: new Float32Array(8),
    variable: { sendCounts: [2, 2, 2, 2], recvCounts: [2, 2, 2, 2] },
  } as const;
  assert.notEqual(memo.plan(variable), memo.plan(variable));
});

test('callViews: in place, a reduce-scatter writes its block at rank * count of the one array; out of place, each array from its start', () => {
  const user = new Float32Array(16);
  const shape = { collective: 'reduceScatter', nranks: 4, count: 4, root: 0, inPlace: true, chunkCount: 0 } as const;
  const inPlace = callViews(shape, 1, { user, output: undefined });
  assert.equal(inPlace.input.length, 16);
  assert.equal(inPlace.output.byteOffset, 4 * 4);
  assert.equal(inPlace.output.length, 4);
  const output = new Float32Array(10);
  const apart = callViews({ ...shape, inPlace: false }, 1, { user, output });
  assert.equal(apart.output.buffer, output.buffer);
  assert.equal(apart.output.length, 4);
  assert.equal(apart.input.length, 16);
});
