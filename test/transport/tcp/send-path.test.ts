import assert from 'node:assert/strict';
import { test } from 'node:test';
import { ErrorCode } from '../../../src/errors.js';
import { MemoryStore } from '../../../src/store/memory-store.js';
import { checksumsFrame } from '../../../src/transport/tcp/send-path.js';
import { TcpTransport } from '../../../src/transport/tcp/tcp-transport.js';
import { injectFrameFault } from '../../harness/frame-faults.js';
import { ctx } from '../conformance.js';

test('frames carry a CRC32 to other machines by default, and as asked otherwise', () => {
  assert.equal(checksumsFrame(undefined, false), true);
  assert.equal(checksumsFrame(undefined, true), false);
  for (const sameMachine of [true, false]) {
    assert.equal(checksumsFrame(true, sameMachine), true);
    assert.equal(checksumsFrame(false, sameMachine), false);
  }
});

test('tcp: a test send hook sees the frames to other processes; a bit it flips is caught by the checksum (resend off)', async () => {
  const store = new MemoryStore();
  const make = (rank: number) =>
    TcpTransport.create({
      rank,
      nranks: 2,
      store,
      commName: 'hook',
      host: '127.0.0.1',
      timeoutMs: 2000,
      checksum: true,
      resendRetries: 0,
    });
  const [a, b] = await Promise.all([make(0), make(1)]);
  injectFrameFault({ kind: 'flip', rank: 0, frame: 1 });
  try {
    const handle = a.trySend(1, 0, new Uint8Array(64).fill(7), { seq: 1, opcode: 0 });
    await assert.rejects(
      b.recv(0, 0, 64, 1, { seq: 1, opcode: 0 }, () => {}, ctx(5000)),
      (err: { code: string }) => err.code === ErrorCode.CHECKSUM,
    );
    await a.waitDelivered(handle, ctx(5000));
  } finally {
    injectFrameFault(undefined);
    await a.close();
    await b.close();
  }
});
