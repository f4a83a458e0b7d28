import assert from 'node:assert/strict';
import { once } from 'node:events';
import type { Socket } from 'node:net';
import { test } from 'node:test';
import { unwritten, writeNow } from '../../../src/transport/tcp/direct-write.js';
import { Intake } from '../../../src/transport/tcp/intake.js';
import { PeerLink } from '../../../src/transport/tcp/peer-link.js';
import { DIRECT_WRITE_MAX_BYTES } from '../../../src/transport/tcp/tcp-tunables.js';
import { loopbackPair } from './loopback-pair.js';

/** A connected loopback pair: `writer` dialed, `reader` accepted and paused. */
async function socketPair(): Promise<{ writer: Socket; reader: Socket; close: () => void }> {
  const { dialed, accepted, close } = await loopbackPair();
  accepted.pause();
  return { writer: dialed, reader: accepted, close };
}

/**
 * A link writing on a loopback pair's dialed end. The reader takes nothing until a test reads it
 * all, so the kernel's buffers fill and later frames queue.
 */
async function linkOverPair(): Promise<{ writer: Socket; reader: Socket; link: PeerLink; close: () => void }> {
  const pair = await socketPair();
  const link = new PeerLink(1, {
    connections: [{ socket: pair.writer, intake: new Intake() }],
    sameMachine: true,
    resendWindowBytes: 0,
  });
  return { ...pair, link };
}

/** Reads from `socket` until `bytes` have come. */
async function readAll(socket: Socket, bytes: number): Promise<Buffer> {
  const chunks: Buffer[] = [];
  let got = 0;
  socket.on('data', (chunk: Buffer) => {
    chunks.push(chunk);
    got += chunk.byteLength;
  });
  socket.resume();
  while (got < bytes) await once(socket, 'data');
  return Buffer.concat(chunks);
}

test('unwritten: what is left after a partial write, across pieces, copied when the memory is reused', () => {
  const a = Uint8Array.from([1, 2, 3]);
  const b = Uint8Array.from([4, 5]);
  assert.deepEqual(unwritten([a, b], 0, false), [a, b]);
  assert.deepEqual(
    unwritten([a, b], 2, false).map((p) => [...p]),
    [[3], [4, 5]],
  );
  assert.deepEqual(
    unwritten([a, b], 4, false).map((p) => [...p]),
    [[5]],
  );
  assert.deepEqual(unwritten([a, b], 5, false), []);
  const copied = unwritten([a, b], 1, true);
  a.fill(0);
  b.fill(0);
  assert.deepEqual(
    copied.map((p) => [...p]),
    [
      [2, 3],
      [4, 5],
    ],
  );
});

test('writeNow writes at once what nothing is queued before, and nothing behind queued bytes, over its limit or on a closed socket', async () => {
  const { writer, reader, close } = await socketPair();
  try {
    assert.equal(writeNow(writer, [Uint8Array.from([1, 2]), Uint8Array.from([3])], 3), 3);
    assert.equal(writeNow(writer, [new Uint8Array(DIRECT_WRITE_MAX_BYTES + 1)], DIRECT_WRITE_MAX_BYTES + 1), 0);
    writer.cork();
    writer.write(Uint8Array.from([4]));
    assert.ok(writer.writableLength > 0);
    assert.equal(writeNow(writer, [Uint8Array.from([5])], 1), 0, 'bytes behind queued ones keep their order');
    writer.write(Uint8Array.from([5]));
    writer.uncork();
    assert.deepEqual([...(await readAll(reader, 5))], [1, 2, 3, 4, 5]);
    writer.destroy();
    assert.equal(writeNow(writer, [Uint8Array.from([6])], 1), 0);
  } finally {
    close();
  }
});

test('frames written at once and frames queued behind a full socket arrive whole and in order, reused memory included', async () => {
  const { reader, link, close } = await linkOverPair();
  try {
    const frameBytes = 48 * 1024;
    const frames = 400;
    const scratch = new Uint8Array(frameBytes);
    let calledBack = 0;
    let queued = 0;
    for (let i = 0; i < frames; i++) {
      const header = Uint8Array.of(i & 0xff, i >> 8);
      scratch.fill(i & 0xff);
      const transient = i % 2 === 0;
      const payload = transient ? scratch : new Uint8Array(frameBytes).fill(i & 0xff);
      const before = calledBack;
      link.writeFrame(0, [header, payload], () => calledBack++, transient);
      if (calledBack === before) queued++;
      // Memory lent as transient is the caller's again at once.
      if (transient) scratch.fill(0xee);
    }
    assert.ok(queued > 0, 'the socket filled, so some frames were queued behind the ones written at once');
    assert.ok(queued < frames, 'the first frames were written at once');
    const got = await readAll(reader, frames * (2 + frameBytes));
    for (let i = 0; i < frames; i++) {
      const at = i * (2 + frameBytes);
      assert.equal(got[at] | (got[at + 1] << 8), i, `frame ${i} in its place`);
      assert.ok(
        got.subarray(at + 2, at + 2 + frameBytes).every((v) => v === (i & 0xff)),
        `frame ${i}'s payload as it was when written`,
      );
    }
    while (calledBack < frames) await new Promise((resolve) => setImmediate(resolve));
    assert.equal(calledBack, frames);
  } finally {
    close();
  }
});

test('copied frames from one reused memory arrive whole and in order, those queued behind a full socket too, and nothing past their length', async () => {
  const { writer, reader, link, close } = await linkOverPair();
  try {
    const frameBytes = 4000;
    const frames = 5000;
    const memory = new Uint8Array(frameBytes + 100);
    for (let i = 0; i < frames; i++) {
      memory.fill(i % 251);
      memory[0] = i & 0xff;
      memory[1] = i >> 8;
      const number = link.writeCopied(0, memory, frameBytes);
      assert.equal(number, i + 1, 'numbered as every frame of the socket is');
      memory.fill(0xee);
    }
    assert.ok(writer.writableLength > 0, 'the socket filled, so later frames were copied into its queue');
    const got = await readAll(reader, frames * frameBytes);
    assert.equal(got.byteLength, frames * frameBytes, 'no byte past any frame');
    for (let i = 0; i < frames; i++) {
      const at = i * frameBytes;
      assert.equal(got[at] | (got[at + 1] << 8), i, `frame ${i} in its place`);
      assert.ok(
        got.subarray(at + 2, at + frameBytes).every((v) => v === i % 251),
        `frame ${i} as it was when written`,
      );
    }
  } finally {
    close();
  }
});
