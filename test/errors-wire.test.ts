import assert from 'node:assert/strict';
import { test } from 'node:test';
import { ErrorCode, TscclError, errorCodeOfWireNumber, errorWireNumber, internalError } from '../src/errors.js';
import { FINGERPRINT_DTYPES, FINGERPRINT_REDUCE_OPS } from '../src/comm/desync-check.js';
import { DTYPE_NAMES } from '../src/dtypes/dtype.js';
import { COMPRESSION_FORMATS } from '../src/compress/compression-spec.js';
import { REDUCE_OPS } from '../src/kernels/reduce-op.js';
import {
  COLLECTIVE_CHANNELS,
  CONTROL_CHANNEL,
  ONE_SHOT_CHANNEL,
  P2P_CHANNEL,
  QUEUED_CHANNELS,
} from '../src/transport/channels.js';
import { OPCODES, opcodeName, opcodeOf } from '../src/transport/transport.js';

// These numbers are on the wire and in shared memory: changing one changes the protocol.
test('error codes have fixed wire numbers, and every code has one', () => {
  assert.deepEqual(
    Object.values(ErrorCode).map((code) => [code, errorWireNumber(code)]),
    [
      ['TSCCL_ERR_INVALID_ARGUMENT', 1],
      ['TSCCL_ERR_TIMEOUT', 2],
      ['TSCCL_ERR_ABORTED', 3],
      ['TSCCL_ERR_PEER_LOST', 4],
      ['TSCCL_ERR_MISMATCH', 5],
      ['TSCCL_ERR_CHECKSUM', 6],
      ['TSCCL_ERR_DESTROYED', 7],
      ['TSCCL_ERR_COMM_FAILED', 8],
      ['TSCCL_ERR_OUT_OF_MEMORY', 9],
      ['TSCCL_ERR_INTERNAL', 10],
      ['TSCCL_ERR_RANK_FAILED', 11],
      ['TSCCL_ERR_UNAVAILABLE', 12],
    ],
  );
  for (const code of Object.values(ErrorCode)) assert.equal(errorCodeOfWireNumber(errorWireNumber(code)), code);
  assert.equal(errorCodeOfWireNumber(0), ErrorCode.INTERNAL);
  assert.equal(errorCodeOfWireNumber(999), ErrorCode.INTERNAL);
});

test('opcodes have fixed wire numbers', () => {
  assert.deepEqual(OPCODES, {
    allReduce: 0,
    broadcast: 1,
    reduce: 2,
    allGather: 3,
    reduceScatter: 4,
    allToAll: 5,
    gather: 6,
    scatter: 7,
    barrier: 8,
    send: 9,
    check: 10,
    compressed: 11,
  });
  assert.equal(opcodeOf('barrier'), 8);
  assert.equal(opcodeName(9), 'send');
  assert.equal(opcodeName(77), 'op#77');
});

test('compression formats have fixed wire numbers', () => {
  assert.deepEqual(COMPRESSION_FORMATS, { fp16: 1, bf16: 2, fp8e4m3: 3, fp8e5m2: 4, int8: 5, int4: 6 });
});

test('the desync fingerprint numbers every data type and reduction, each once', () => {
  assert.deepEqual(Object.keys(FINGERPRINT_DTYPES).sort(), [...DTYPE_NAMES].sort());
  assert.deepEqual(Object.keys(FINGERPRINT_REDUCE_OPS).sort(), [...REDUCE_OPS].sort());
  assert.equal(new Set(Object.values(FINGERPRINT_DTYPES)).size, DTYPE_NAMES.length);
  assert.equal(FINGERPRINT_DTYPES.float32, 0);
  assert.equal(FINGERPRINT_DTYPES.bfloat16, 9);
  assert.equal(FINGERPRINT_REDUCE_OPS.avg, 4);
});

test('channels: collectives, point-to-point and control never share a number', () => {
  const collective = Array.from({ length: COLLECTIVE_CHANNELS }, (_, i) => i);
  assert.ok(collective.includes(ONE_SHOT_CHANNEL));
  assert.ok(!collective.includes(P2P_CHANNEL));
  assert.ok(P2P_CHANNEL < QUEUED_CHANNELS);
  assert.ok(CONTROL_CHANNEL >= QUEUED_CHANNELS);
});

test('an error that is not a TscclError becomes INTERNAL with its cause, never a mismatch', () => {
  const bug = new TypeError('x is undefined');
  const err = internalError(bug, 'receiving a frame', { peer: 2 });
  assert.equal(err.code, ErrorCode.INTERNAL);
  assert.equal(err.cause, bug);
  assert.equal(err.details.peer, 2);
  assert.match(err.message, /receiving a frame: TypeError: x is undefined/);
  const own = new TscclError(ErrorCode.TIMEOUT, 'late');
  assert.equal(internalError(own, 'anything'), own);
});

test('messages name one rank in the singular and several in a list', async () => {
  const { rankList } = await import('../src/errors.js');
  assert.equal(rankList([1]), 'rank 1');
  assert.equal(rankList([0, 3]), 'ranks 0 and 3');
  assert.equal(rankList([0, 1, 3]), 'ranks 0, 1 and 3');
});
