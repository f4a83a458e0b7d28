import assert from 'node:assert/strict';
import { test } from 'node:test';
import { ErrorCode } from '../../../src/errors.js';
import { type OutgoingFrame, setSendHookForTests } from '../../../src/transport/tcp/send-path.js';
import type { TcpTransport, TcpTransportOptions } from '../../../src/transport/tcp/tcp-transport.js';
import { type Consume, copyInto } from '../../../src/transport/transport.js';
import { ctx } from '../conformance.js';
import { checksummedPair } from './checksummed-pair.js';

/** Two checksummed TCP transports of one process, rank 0 and rank 1. */
const pair = (options: Partial<TcpTransportOptions> = {}) => checksummedPair({ timeoutMs: 5000, ...options });

/** Flips the first byte of rank 0's frames whose (1-based) count `corrupts` picks, after the checksum was taken. */
function flipFrames(corrupts: (n: number) => boolean): { flipped: () => number } {
  let n = 0;
  let flipped = 0;
  setSendHookForTests((out: OutgoingFrame) => {
    if (out.rank !== 0 || !corrupts(++n) || out.data.byteLength === 0) return false;
    flipped++;
    out.socket.write(out.header());
    const corrupt = Uint8Array.from(out.data);
    corrupt[0] ^= 1;
    out.socket.write(corrupt, () => out.delivered());
    return true;
  });
  return { flipped: () => flipped };
}

const pattern = (bytes: number, salt: number) => {
  const data = new Uint8Array(bytes);
  for (let i = 0; i < bytes; i++) data[i] = (i * 31 + salt) & 0xff;
  return data;
};

/** A reduction's consumer: adds each byte into `acc` (pieces may be anywhere, no `into`). */
function addInto(acc: Uint8Array): Consume {
  return (piece, offset) => {
    for (let i = 0; i < piece.byteLength; i++) acc[offset + i] = (acc[offset + i] + piece[i]) & 0xff;
  };
}

/** Turns the event loop until `condition` holds (at most 10 s). */
async function until(condition: () => boolean): Promise<void> {
  const deadline = performance.now() + 10_000;
  while (!condition()) {
    if (performance.now() > deadline) throw new Error('condition not reached in 10 s');
    await new Promise((resolve) => setImmediate(resolve));
  }
}

async function closeAll(...transports: TcpTransport[]): Promise<void> {
  setSendHookForTests(undefined);
  await Promise.all(transports.map((t) => t.close()));
}

test('tcp resend: a small frame whose bit flipped comes again, and the receive gets the sent bytes', async () => {
  const [a, b] = await pair();
  const hook = flipFrames((n) => n === 1);
  try {
    const sent = pattern(64, 7);
    const handle = a.trySend(1, 0, sent, { seq: 1, opcode: 0 });
    const got = new Uint8Array(64);
    await b.recv(0, 0, 64, 1, { seq: 1, opcode: 0 }, copyInto(got), ctx(5000));
    await a.waitDelivered(handle, ctx(5000));
    assert.deepEqual(got, sent);
    assert.equal(hook.flipped(), 1);
    assert.deepEqual(b.recoveries()[0], {
      corrupted: 1,
      requested: 1,
      recovered: 1,
      resent: 0,
      garbled: 0,
      reconnects: 0,
      failovers: 0,
      failbacks: 0,
    });
    assert.equal(a.recoveries()[1].resent, 1);
  } finally {
    await closeAll(a, b);
  }
});

test('tcp resend: a large frame sent from the caller memory comes again into a plain receive and into a reduction', async () => {
  const [a, b] = await pair();
  flipFrames((n) => n <= 2);
  try {
    const bytes = 1 << 20;
    const first = pattern(bytes, 1);
    const second = pattern(bytes, 2);
    const copied = new Uint8Array(bytes);
    const reduced = pattern(bytes, 5);
    const expected = reduced.map((v, i) => (v + second[i]) & 0xff);
    // Both receives wait before their frames come, so each frame streams into its receiver.
    const received = Promise.all([
      b.recv(0, 0, bytes, 1, { seq: 1, opcode: 0 }, copyInto(copied), ctx(10_000)),
      b.recv(0, 1, bytes, 1, { seq: 1, opcode: 0 }, addInto(reduced), ctx(10_000)),
    ]);
    const h1 = a.trySend(1, 0, first, { seq: 1, opcode: 0 });
    const h2 = a.trySend(1, 1, second, { seq: 1, opcode: 0 });
    await received;
    // Each send is delivered once its frame is acknowledged intact.
    await a.waitDelivered(h1, ctx(10_000));
    await a.waitDelivered(h2, ctx(10_000));
    assert.deepEqual(copied, first);
    assert.deepEqual(reduced, expected, 'each byte reduced once, from the intact frame');
    assert.equal(b.recoveries()[0].recovered, 2);
  } finally {
    await closeAll(a, b);
  }
});

test('tcp resend: a frame that failed while nobody waited keeps its place: the frames behind it do not overtake it', async () => {
  const [a, b] = await pair();
  flipFrames((n) => n === 1);
  try {
    const messages = [pattern(256, 1), pattern(256, 2), pattern(256, 3)];
    for (const m of messages) a.trySend(1, 0, m, { seq: 9, opcode: 0 });
    // No receive is posted until the first frame came again: all three wait in the inbox.
    await until(() => b.recoveries()[0].recovered === 1 && b.hasMessage(0, 0));
    for (const m of messages) {
      const got = new Uint8Array(256);
      await b.recv(0, 0, 256, 1, { seq: 9, opcode: 0 }, copyInto(got), ctx(5000));
      assert.deepEqual(got, m);
    }
    assert.equal(b.recoveries()[0].recovered, 1);
  } finally {
    await closeAll(a, b);
  }
});

test('tcp resend: with bits flipped in every fifth frame, 200 messages of mixed sizes all arrive intact', async () => {
  const [a, b] = await pair();
  const hook = flipFrames((n) => n % 5 === 0);
  try {
    const sizes = [8, 100, 4096, 4104, 70_000, 300_000];
    for (let i = 0; i < 200; i++) {
      const bytes = sizes[i % sizes.length];
      const sent = pattern(bytes, i);
      const handle = a.trySend(1, i % 3, sent, { seq: i, opcode: 0 });
      const got = new Uint8Array(bytes);
      const consume = i % 2 === 0 ? copyInto(got) : addInto(got);
      await b.recv(0, i % 3, bytes, 1, { seq: i, opcode: 0 }, consume, ctx(10_000));
      await a.waitDelivered(handle, ctx(10_000));
      assert.deepEqual(got, sent, `message ${i} of ${bytes} bytes`);
    }
    assert.equal(hook.flipped(), 40);
    assert.equal(b.recoveries()[0].recovered, 40);
    assert.equal(a.recoveries()[1].resent, 40);
  } finally {
    await closeAll(a, b);
  }
});

const unrecoverable: [string, Partial<TcpTransportOptions>, RegExp][] = [
  ['off (resendRetries 0), a flipped bit fails the receive', { resendRetries: 0 }, /TCP frame checksum mismatch/],
  [
    'a frame the sender no longer holds (window of 0 bytes) fails the receive, saying why',
    { resendWindowBytes: 0 },
    /rank 0 no longer holds it/,
  ],
];
for (const [what, options, message] of unrecoverable) {
  test(`tcp resend: ${what} with TSCCL_ERR_CHECKSUM`, async () => {
    const [a, b] = await pair(options);
    flipFrames((n) => n === 1);
    try {
      a.trySend(1, 0, new Uint8Array(64).fill(7), { seq: 1, opcode: 0 });
      await assert.rejects(
        b.recv(0, 0, 64, 1, { seq: 1, opcode: 0 }, () => {}, ctx(5000)),
        (err: { code: string; message: string }) => err.code === ErrorCode.CHECKSUM && message.test(err.message),
      );
    } finally {
      await closeAll(a, b);
    }
  });
}

test('tcp resend: with two sockets per peer, striped checksummed messages are acknowledged socket by socket', async () => {
  const [a, b] = await pair({ socketsPerPeer: 2 });
  flipFrames((n) => n === 1 || n === 3);
  try {
    for (let i = 0; i < 4; i++) {
      const bytes = i % 2 === 0 ? 64 : 1 << 20; // 1 MiB is striped (STRIPE_MIN_BYTES is 512 KiB)
      const sent = pattern(bytes, i);
      const got = new Uint8Array(bytes);
      const received = b.recv(
        0,
        0,
        bytes,
        1,
        { seq: i, opcode: 0 },
        i === 3 ? addInto(got) : copyInto(got),
        ctx(10_000),
      );
      const handle = a.trySend(1, 0, sent, { seq: i, opcode: 0 });
      await received;
      await a.waitDelivered(handle, ctx(10_000));
      assert.deepEqual(got, sent, `message ${i}`);
    }
    assert.equal(b.recoveries()[0].recovered, 2);
    assert.equal(a.recoveries()[1].resent, 2);
  } finally {
    await closeAll(a, b);
  }
});

test('tcp resend: a frame corrupted just before its sender closes still comes again: the sender ends its sockets only once acknowledged', async () => {
  const [a, b] = await pair();
  flipFrames((n) => n === 1);
  try {
    const sent = pattern(64, 3);
    a.trySend(1, 0, sent, { seq: 1, opcode: 0 });
    const closing = a.close();
    const got = new Uint8Array(64);
    await b.recv(0, 0, 64, 1, { seq: 1, opcode: 0 }, copyInto(got), ctx(5000));
    assert.deepEqual(got, sent);
    assert.equal(b.recoveries()[0].recovered, 1);
    await closing;
  } finally {
    await closeAll(a, b);
  }
});
