import assert from 'node:assert/strict';
import { test } from 'node:test';
import { checkOptions, closestName } from '../../src/comm/call-options.js';
import { ErrorCode, TscclError } from '../../src/errors.js';
import { runFixture } from '../harness/ranks.js';

const where = { rank: 2, defaultTimeoutMs: 1000 };
const refused = (f: () => unknown, message: RegExp, code: string = ErrorCode.INVALID_ARGUMENT) =>
  assert.throws(
    f,
    (err: unknown) => err instanceof TscclError && err.code === code && message.test(err.message),
    message.source,
  );

test('an unknown option is refused, naming the key, the call and the closest valid key', () => {
  refused(
    () => checkOptions('allReduce', { opp: 'max' }, where),
    /^Rank 2: unknown option 'opp' for allReduce; did you mean 'op'\?$/,
  );
  refused(
    () => checkOptions('allGather', { outptu: new Float32Array(1) }, where),
    /unknown option 'outptu' for allGather; did you mean 'output'\?/,
  );
  refused(() => checkOptions('broadcast', { rot: 1 }, where), /did you mean 'root'\?/);
  // A key of another call is unknown here too, and nothing close: the valid keys are listed.
  refused(
    () => checkOptions('allReduce', { root: 1 }, where),
    /unknown option 'root' for allReduce; it takes timeoutMs, signal, checksum, output, dtype, algorithm, op/,
  );
  refused(() => checkOptions('barrier', { flavour: undefined }, where), /unknown option 'flavour' for barrier/);
  refused(
    () => checkOptions('init', { timeout: 5 }, { defaultTimeoutMs: 1 }),
    /^unknown option 'timeout' for init; did you mean 'timeoutMs'\?$/,
  );
});

test('known options of the wrong type are refused, naming the key; undefined counts as absent', () => {
  refused(() => checkOptions('broadcast', { root: '1' }, where), /Rank 2: root must be an integer, got '1'/);
  refused(() => checkOptions('allReduce', { op: 3 }, where), /op must be the name of a reduction, got 3/);
  refused(() => checkOptions('allReduce', { output: [1, 2] }, where), /output must be a typed array, got \[1, 2\]/);
  refused(
    () => checkOptions('allReduce', { timeoutMs: -5 }, where),
    /timeoutMs must be a positive number of ms, got -5/,
  );
  refused(() => checkOptions('send', { checksum: 'yes' }, where), /checksum must be true or false/);
  refused(() => checkOptions('split', { color: 1.5 }, where), /color must be an integer or null, got 1.5/);
  refused(() => checkOptions('allToAll', { sendCounts: 'x' }, where), /sendCounts must be an array of integers/);
  refused(() => checkOptions('allReduce', null, where), /options must be an object, got null/);
  assert.deepEqual(checkOptions('reduce', { root: undefined, op: 'max', timeoutMs: 5 }, where), {
    timeoutMs: 5,
    signal: undefined,
    checksum: undefined,
  });
  assert.deepEqual(checkOptions('split', { color: null }, where), {
    timeoutMs: 1000,
    signal: undefined,
    checksum: undefined,
  });
});

test('a signal already aborted ends the call with TSCCL_ERR_ABORTED', () => {
  const controller = new AbortController();
  controller.abort(new Error('stop'));
  refused(() => checkOptions('recv', { signal: controller.signal }, where), /already aborted/, ErrorCode.ABORTED);
});

test('closestName: a slip of a letter or two, or a swap, is near; an unrelated word is not', () => {
  assert.equal(closestName('opp', ['op', 'output']), 'op');
  assert.equal(closestName('algoritm', ['algorithm', 'op']), 'algorithm');
  assert.equal(closestName('tiemoutMs', ['timeoutMs']), 'timeoutMs');
  assert.equal(closestName('banana', ['op', 'root', 'output']), undefined);
});

test('on a real communicator: an unknown or mistyped option is refused at once on the calling rank, and nothing blocks', async () => {
  const { results } = await runFixture('errors-rank', 3, { scenario: 'unknown-options' });
  for (const [rank, out] of (results as Record<string, { code: string; message?: string; ms: number }>[]).entries()) {
    assert.equal(out.unknownKey.code, ErrorCode.INVALID_ARGUMENT);
    assert.equal(out.unknownKey.message, `Rank ${rank}: unknown option 'opp' for allReduce; did you mean 'op'?`);
    assert.equal(out.wrongType.code, ErrorCode.INVALID_ARGUMENT);
    assert.match(out.wrongType.message!, /root must be an integer, got '1'/);
    assert.equal(out.unknownSplitKey.code, ErrorCode.INVALID_ARGUMENT);
    for (const key of ['unknownKey', 'wrongType', 'unknownSplitKey'])
      assert.ok(out[key].ms < 50, `rank ${rank} ${key} took ${out[key].ms} ms`);
    assert.equal(out.afterwards.code, 'OK');
    assert.equal(out.afterwardsValue.code, 'OK');
  }
});
