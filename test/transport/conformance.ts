import assert from 'node:assert/strict';
import { test } from 'node:test';
import { ErrorCode, TscclError } from '../../src/errors.js';
import { type Transport, type WaitContext, copyInto } from '../../src/transport/transport.js';

/**
 * The behaviour every transport must show, run against any pair of connected endpoints. A
 * transport's own test calls this with a factory; the cases run in one thread, so transports
 * must not block the event loop while waiting.
 */
export interface TransportPair {
  readonly a: Transport;
  readonly b: Transport;
  /** Memory the transport may send from (registered memory for shm). */
  sendable(bytes: number): Uint8Array;
  /** The receiver reads a send's memory in place (shm), so a send is delivered only once received. */
  readonly readsInPlace?: boolean;
  close(): Promise<void>;
}

/** A wait context; by default generous, since a loaded machine must not fail a wait that succeeds. */
export function ctx(timeoutMs = 30_000): WaitContext {
  const deadline = performance.now() + timeoutMs;
  return {
    spinMs: 0,
    spinYields: false,
    sliceMs: () => Math.max(1, Math.min(20, deadline - performance.now())),
    check: () => {
      if (performance.now() > deadline)
        throw new TscclError(ErrorCode.TIMEOUT, `conformance wait exceeded ${timeoutMs} ms`);
    },
  };
}

const tag = (seq: number) => ({ seq, opcode: 0 });

async function receive(
  t: Transport,
  peer: number,
  channel: number,
  bytes: number,
  seq: number,
  elementBytes = 1,
  wait = ctx(),
): Promise<Uint8Array> {
  const out = new Uint8Array(bytes);
  let covered = 0;
  await t.recv(
    peer,
    channel,
    bytes,
    elementBytes,
    tag(seq),
    (piece, offset) => {
      assert.equal(offset % elementBytes, 0, 'piece offset must be element aligned');
      assert.equal(piece.byteLength % elementBytes, 0, 'piece length must be element aligned');
      assert.equal(piece.byteOffset % elementBytes, 0, 'piece must sit at an aligned address');
      out.set(piece, offset);
      covered += piece.byteLength;
    },
    wait,
  );
  assert.equal(covered, bytes);
  return out;
}

export function transportConformance(name: string, connect: () => Promise<TransportPair>): void {
  const withPair = (title: string, body: (p: TransportPair) => Promise<void>) =>
    test(`${name}: ${title}`, async () => {
      const pair = await connect();
      try {
        await body(pair);
      } finally {
        await pair.close();
      }
    });

  withPair('messages on a channel arrive in order, byte for byte', async ({ a, b, sendable }) => {
    const sent = [1, 7, 4096, 100_000].map((size, i) => {
      const m = sendable(size);
      for (let k = 0; k < size; k++) m[k] = (k * 31 + i) & 255;
      return m;
    });
    const handles = [];
    for (const [i, m] of sent.entries()) handles.push(await a.send(b.rank, 0, m, tag(i + 1), ctx()));
    for (const [i, m] of sent.entries()) assert.deepEqual(await receive(b, a.rank, 0, m.byteLength, i + 1), m);
    for (const h of handles) {
      await a.waitDelivered(h, ctx());
      assert.ok(a.isDelivered(h));
    }
  });

  withPair('a receiver that waits first gets the message in whole, aligned elements', async ({ a, b, sendable }) => {
    const m = sendable(3 * 1024 * 1024 + 8);
    for (let k = 0; k < m.byteLength; k++) m[k] = (k * 7) & 255;
    const receiving = receive(b, a.rank, 0, m.byteLength, 1, 8);
    await new Promise((r) => setImmediate(r)); // a turn of the event loop: the receiver waits by then
    const h = await a.send(b.rank, 0, m, tag(1), ctx());
    assert.deepEqual(await receiving, m);
    await a.waitDelivered(h, ctx());
  });

  withPair('an empty message is a message', async ({ a, b, sendable }) => {
    const h = await a.send(b.rank, 0, sendable(0), tag(1), ctx());
    assert.equal((await receive(b, a.rank, 0, 0, 1)).byteLength, 0);
    await a.waitDelivered(h, ctx());
  });

  withPair('channels are independent queues', async ({ a, b, sendable }) => {
    const m0 = sendable(8).fill(1);
    const m1 = sendable(8).fill(2);
    await a.send(b.rank, 0, m0, tag(1), ctx());
    await a.send(b.rank, 1, m1, tag(1), ctx());
    assert.deepEqual([...(await receive(b, a.rank, 1, 8, 1))], Array(8).fill(2));
    assert.deepEqual([...(await receive(b, a.rank, 0, 8, 1))], Array(8).fill(1));
  });

  withPair('both directions at once', async ({ a, b, sendable }) => {
    const ma = sendable(64).fill(3);
    const mb = sendable(64).fill(4);
    const [ra, rb] = await Promise.all([
      (async () => {
        await a.send(b.rank, 0, ma, tag(1), ctx());
        return receive(a, b.rank, 0, 64, 1);
      })(),
      (async () => {
        await b.send(a.rank, 0, mb, tag(1), ctx());
        return receive(b, a.rank, 0, 64, 1);
      })(),
    ]);
    assert.deepEqual([...ra], Array(64).fill(4));
    assert.deepEqual([...rb], Array(64).fill(3));
  });

  withPair(
    "a send's memory may be reused once it is delivered, and one read in place is not delivered before its receive",
    async ({ a, b, sendable, readsInPlace }) => {
      for (const [i, size] of [16, 65536].entries()) {
        const data = sendable(size).fill(7);
        const h = await a.send(b.rank, 0, data, tag(i + 1), ctx());
        if (readsInPlace) assert.equal(a.isDelivered(h), false);
        const received = receive(b, a.rank, 0, size, i + 1);
        await a.waitDelivered(h, ctx());
        assert.equal(a.isDelivered(h), true);
        data.fill(9);
        assert.deepEqual(await received, new Uint8Array(size).fill(7));
      }
    },
  );

  withPair(
    'trySend posts at once; tryRecv says false until the message is there, then takes it whole',
    async ({ a, b, sendable }) => {
      assert.ok(
        a.trySend !== undefined && b.tryRecv !== undefined,
        "the transport offers the executor's synchronous path",
      );
      const out = new Uint8Array(64);
      assert.equal(b.tryRecv(a.rank, 0, 64, 1, tag(1), copyInto(out)), false);
      const m = sendable(64);
      for (let k = 0; k < 64; k++) m[k] = k * 3;
      const h = a.trySend(b.rank, 0, m, tag(1));
      assert.ok(h !== undefined);
      const deadline = performance.now() + 30_000;
      while (!b.tryRecv(a.rank, 0, 64, 1, tag(1), copyInto(out))) {
        assert.ok(performance.now() < deadline, 'the message never arrived');
        await new Promise((resolve) => setImmediate(resolve));
      }
      assert.deepEqual(out, new Uint8Array(m));
      await a.waitDelivered(h, ctx());
    },
  );

  withPair('a size or tag mismatch is reported with both sides, not delivered', async ({ a, b, sendable }) => {
    await a.send(b.rank, 0, sendable(32), tag(5), ctx());
    await assert.rejects(receive(b, a.rank, 0, 16, 5), (err: unknown) => {
      assert.ok(err instanceof TscclError);
      assert.equal(err.code, ErrorCode.MISMATCH);
      assert.match(err.message, /expected .*#5 of 16 bytes from rank \d+, but rank \d+ sent .*#5 of 32 bytes/);
      return true;
    });
  });

  withPair('a recv with no sender ends when its context says so', async ({ a, b }) => {
    // Unended, the wait would last forever: ending at all, with TIMEOUT, is the point.
    await assert.rejects(receive(b, a.rank, 0, 8, 1, 1, ctx(100)), { code: ErrorCode.TIMEOUT });
  });

  withPair(
    'many sends in flight: the sender blocks when the queue is full and resumes as the receiver drains',
    async ({ a, b, sendable }) => {
      const count = 200;
      const m = sendable(4);
      const sending = (async () => {
        for (let i = 1; i <= count; i++) await a.send(b.rank, 0, m, tag(i), ctx());
      })();
      for (let i = 1; i <= count; i++) await receive(b, a.rank, 0, 4, i, 1, ctx());
      await sending;
    },
  );
  // The low-latency path (the one-shot collectives), where the transport has one: one call each.
  withPair(
    'low-latency path: a peer reads what was published, a rank reads its own, a rank without data still states the size',
    async ({ a, b }) => {
      if (a.lowLatency === undefined || b.lowLatency === undefined) return;
      const data = new Uint8Array(24).map((_, i) => i * 7 + 1);
      await a.lowLatency.publish(1, 3, 24, data, ctx());
      await b.lowLatency.publish(1, 3, 24, undefined, ctx());
      await b.lowLatency.arrived(a.rank, 1, ctx());
      await a.lowLatency.arrived(b.rank, 1, ctx());
      assert.deepEqual([...b.lowLatency.read(a.rank, 1, 3, 24)], [...data]);
      assert.deepEqual([...a.lowLatency.read(a.rank, 1, 3, 24)], [...data]);
      a.lowLatency.read(b.rank, 1, 3, 24);
    },
  );

  withPair(
    'low-latency path: a publication of another operation or size is a mismatch naming both sides',
    async ({ a, b }) => {
      if (a.lowLatency === undefined || b.lowLatency === undefined) return;
      await a.lowLatency.publish(1, 3, 16, new Uint8Array(16), ctx());
      await b.lowLatency.publish(1, 0, 8, new Uint8Array(8), ctx());
      await b.lowLatency.arrived(a.rank, 1, ctx());
      assert.throws(
        () => b.lowLatency!.read(a.rank, 1, 0, 8),
        (err: unknown) => {
          assert.ok(err instanceof TscclError);
          assert.equal(err.code, ErrorCode.MISMATCH);
          assert.match(
            err.message,
            /expected allReduce #1 of 8 bytes from rank \d+, but rank \d+ sent allGather #1 of 16 bytes/,
          );
          return true;
        },
      );
    },
  );

  withPair(
    'low-latency path: waiting for a peer that never publishes ends when the context says so',
    async ({ a, b }) => {
      if (a.lowLatency === undefined || b.lowLatency === undefined) return;
      await assert.rejects(
        async () => {
          await b.lowLatency!.arrived(a.rank, 1, ctx(100));
        },
        { code: ErrorCode.TIMEOUT },
      );
    },
  );
}
