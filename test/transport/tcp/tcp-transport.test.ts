import assert from 'node:assert/strict';
import { connect } from 'node:net';
import { test } from 'node:test';
import { ErrorCode } from '../../../src/errors.js';
import { Arena } from '../../../src/memory/arena.js';
import { MemoryStore } from '../../../src/store/memory-store.js';
import { TcpTransport, commIdOf } from '../../../src/transport/tcp/tcp-transport.js';
import { STRIPE_MIN_BYTES } from '../../../src/transport/tcp/tcp-tunables.js';
import { copyInto } from '../../../src/transport/transport.js';
import { rankSpin } from '../../../src/transport/wait.js';
import { ctx, transportConformance } from '../conformance.js';
import { waitFor } from '../../harness/wait-for.js';

const pair = async (
  token?: string,
  tokens: [string?, string?] = [token, token],
  socketsPerPeer = 1,
  readMemory?: (bytes: number) => Uint8Array,
  holdWhileSendingMs?: number,
) => {
  const store = new MemoryStore();
  const make = (rank: number) =>
    TcpTransport.create({
      rank,
      nranks: 2,
      store,
      commName: 'test',
      host: '127.0.0.1',
      token: tokens[rank],
      timeoutMs: 20_000,
      socketsPerPeer,
      readMemory,
      holdWhileSendingMs,
    });
  return { store, transports: await Promise.all([make(0), make(1)]) };
};

transportConformance('tcp', async () => {
  const {
    transports: [a, b],
  } = await pair('job-secret');
  return {
    a,
    b,
    sendable: (n) => new Uint8Array(n),
    close: async () => {
      await a.close();
      await b.close();
    },
  };
});

transportConformance('tcp, 3 sockets per peer', async () => {
  const {
    transports: [a, b],
  } = await pair('job-secret', undefined, 3);
  return {
    a,
    b,
    sendable: (n) => new Uint8Array(n),
    close: async () => {
      await a.close();
      await b.close();
    },
  };
});

const arena = Arena.create();
const inArena = (bytes: number) => arena.allocateOwned(Uint8Array, bytes, 1);

transportConformance('tcp, reading into arena memory', async () => {
  const {
    transports: [a, b],
  } = await pair('job-secret', undefined, 1, inArena);
  return {
    a,
    b,
    sendable: (n) => new Uint8Array(n),
    close: async () => {
      await a.close();
      await b.close();
    },
  };
});

test('tcp: a waiting receiver is handed pieces that sit in the read memory, so reductions need no staging', async () => {
  const {
    transports: [a, b],
  } = await pair(undefined, undefined, 1, inArena);
  const message = new Uint8Array(4 << 20).map((_, i) => (i * 13) & 255);
  const received = new Uint8Array(message.byteLength);
  let pieces = 0;
  let outside = 0;
  const receiving = b.recv(
    0,
    0,
    message.byteLength,
    4,
    { seq: 1, opcode: 0 },
    (piece, offset) => {
      pieces++;
      if (!arena.contains(piece)) outside++;
      received.set(piece, offset);
    },
    ctx(),
  );
  await new Promise((r) => setImmediate(r)); // the receiver waits from its call on; a turn of the event loop to be sure
  await a.send(1, 0, message, { seq: 1, opcode: 0 }, ctx());
  await receiving;
  assert.deepEqual(received, message);
  assert.ok(pieces > 1, `a 4 MiB message streams in pieces (got ${pieces})`);
  // An element that straddles two reads is completed in front of the second one, in the read memory too.
  assert.equal(outside, 0, `${outside} of ${pieces} pieces came from outside the arena`);
  await a.close();
  await b.close();
});

/** A receive into its own memory that counts its pieces and the bytes Node read straight into it. */
const countingReceive = (bytes: number) => {
  const dst = new Uint8Array(bytes);
  const plain = copyInto(dst);
  const seen = { dst, inPlace: 0, pieces: 0 };
  const consume = Object.assign(
    (piece: Uint8Array, offset: number) => {
      seen.pieces++;
      if (piece.buffer === dst.buffer && piece.byteOffset === offset) seen.inPlace += piece.byteLength;
      plain(piece, offset);
    },
    { into: dst },
  );
  return { seen, consume };
};

test('tcp: a plain receive reads every byte straight into its destination, and the message behind waits in the socket for its receive', async () => {
  const {
    transports: [a, b],
  } = await pair();
  const messages = [1, 2].map((m) => new Uint8Array(1 << 20).map((_, i) => (i * 7 + m) & 255));
  const receive = (i: number) => {
    const { seen, consume } = countingReceive(messages[i].byteLength);
    return b.recv(0, 0, seen.dst.byteLength, 1, { seq: i + 1, opcode: 0 }, consume, ctx()).then(() => seen);
  };
  const first = receive(0);
  for (const [i, m] of messages.entries()) await a.send(1, 0, m, { seq: i + 1, opcode: 0 }, ctx());
  // The second receive is posted only once the first is done, as an executor's next step is.
  const results = [await first, await receive(1)];
  for (const [i, { dst, inPlace, pieces }] of results.entries()) {
    assert.deepEqual(dst, messages[i], `message ${i + 1}`);
    // The first message's header came in one read with the bytes behind it, which are copied; once
    // a large frame went in place, the next header is read alone and not one payload byte passes
    // through the read buffer. A buffered message would come as one piece from elsewhere.
    const message = `message ${i + 1}: ${inPlace} of ${dst.byteLength} bytes read in place, in ${pieces} pieces`;
    if (i === 0) assert.ok(pieces > 1 && inPlace >= dst.byteLength / 2, message);
    else assert.equal(inPlace, dst.byteLength, message);
  }
  await a.close();
  await b.close();
});

// More than loopback's socket buffers take: the send is not taken until the peer reads.
const UNBUFFERED_BYTES = 48 << 20;

test('tcp: a frame that comes while this rank waits for its own send to be taken waits in the socket, then streams into the receive posted after', async () => {
  // The hold is made long here so that the test does not race it; by default it ends after 1 ms.
  const {
    transports: [a, b],
  } = await pair(undefined, undefined, 1, undefined, 10_000);
  const big = new Uint8Array(UNBUFFERED_BYTES).fill(7);
  const reply = new Uint8Array(1 << 20).map((_, i) => (i * 11) & 255);
  const sent = await b.send(0, 0, big, { seq: 1, opcode: 0 }, ctx());
  assert.equal(b.isDelivered(sent), false, 'the large send waits for its reader');
  const taken = b.waitDelivered(sent, ctx());
  // a answers at once, then takes the large message: the answer reaches b during its wait.
  await a.send(1, 0, reply, { seq: 2, opcode: 0 }, ctx());
  const bigAtA = countingReceive(big.byteLength);
  await a.recv(1, 0, big.byteLength, 1, { seq: 1, opcode: 0 }, bigAtA.consume, ctx());
  await taken;
  const { seen, consume } = countingReceive(reply.byteLength);
  await b.recv(0, 0, reply.byteLength, 1, { seq: 2, opcode: 0 }, consume, ctx());
  assert.deepEqual(bigAtA.seen.dst, big);
  assert.deepEqual(seen.dst, reply);
  // Only what came in the header's read is copied; a frame buffered during the wait would come as one piece from elsewhere.
  assert.ok(seen.inPlace >= reply.byteLength / 2, `${seen.inPlace} of ${reply.byteLength} bytes read in place`);
  await a.close();
  await b.close();
});

test('tcp: two ranks that each wait for their own large send to be taken before receiving both finish (frames held meanwhile give up)', async () => {
  const { transports } = await pair();
  const messages = [1, 2].map((m) => new Uint8Array(UNBUFFERED_BYTES).fill(m));
  const exchange = async (rank: number) => {
    const t = transports[rank];
    const peer = 1 - rank;
    await t.waitDelivered(await t.send(peer, 0, messages[rank], { seq: 1, opcode: 0 }, ctx()), ctx());
    const { seen, consume } = countingReceive(UNBUFFERED_BYTES);
    await t.recv(peer, 0, UNBUFFERED_BYTES, 1, { seq: 1, opcode: 0 }, consume, ctx());
    return seen.dst;
  };
  const received = await Promise.all([exchange(0), exchange(1)]);
  assert.deepEqual(received[0], messages[1]);
  assert.deepEqual(received[1], messages[0]);
  await Promise.all(transports.map((t) => t.close()));
});

test('tcp: one-shot messages of 4 KiB are copies: calls published back to back each arrive intact', async () => {
  const {
    transports: [a, b],
  } = await pair();
  try {
    assert.equal(a.lowLatency.capacity, 4096);
    const messages = [1, 2, 3].map((seq) => new Uint8Array(4096).map((_, i) => (i * seq + seq) & 255));
    // The sender reuses one buffer for its messages; nothing may still point into it once publish returns.
    for (const [i, m] of messages.entries()) assert.equal(a.lowLatency.publish(i + 1, 0, 4096, m, ctx()), undefined);
    for (const [i, m] of messages.entries()) {
      await b.lowLatency.arrived(0, i + 1, ctx());
      assert.deepEqual([...b.lowLatency.read(0, i + 1, 0, 4096)], [...m]);
    }
    assert.throws(() => a.lowLatency.publish(4, 0, 4097, new Uint8Array(4097), ctx()), RangeError);
  } finally {
    await a.close();
    await b.close();
  }
});

test("tcp: a one-shot wait reads its peer's socket in place for a few microseconds, and not while it owes that peer bytes", async (t) => {
  // Where 2 ranks outnumber the cores the spin is off: its empty reads would take the peer's CPU.
  if (rankSpin(2).spinYields) return t.skip('this machine has one core: the transport does not spin here');
  const {
    transports: [a, b],
  } = await pair();
  try {
    const start = performance.now();
    assert.equal(a.spinForMessage(1, 0), false, 'nothing sent');
    // It gave up (returning at all shows that); its budget is receivePollMs's, tested above. The
    // bound only catches a spin for the whole timeout, with room for a loaded machine.
    assert.ok(performance.now() - start < 10_000, `gave up after ${(performance.now() - start).toFixed(1)} ms`);
    b.lowLatency.publish(1, 0, 8, new Uint8Array(8).fill(7), ctx());
    // No turn of the event loop between the send and the spin: the spin itself reads the frame.
    let found = false;
    for (let i = 0; i < 1000 && !found; i++) found = a.spinForMessage(1, 0);
    assert.ok(found);
    assert.deepEqual([...a.lowLatency.read(1, 1, 0, 8)], new Array(8).fill(7));
    // A send the socket could not take whole stays queued until the event loop turns.
    a.trySend(1, 5, new Uint8Array(64 << 20), { seq: 2, opcode: 0 });
    b.lowLatency.publish(2, 0, 8, new Uint8Array(8).fill(9), ctx());
    assert.equal(a.spinForMessage(1, 0), false, 'the peer may be waiting for the queued bytes');
    await a.lowLatency.arrived(1, 2, ctx());
    assert.deepEqual([...a.lowLatency.read(1, 2, 0, 8)], new Array(8).fill(9));
    await b.recv(0, 5, 64 << 20, 1, { seq: 2, opcode: 0 }, () => {}, ctx());
  } finally {
    await a.close();
    await b.close();
  }
});

test("tcp: a mid-size send is taken before it returns, and its receive reads the peer's socket in place, with no turn of the event loop", async (t) => {
  if (rankSpin(2).spinYields) return t.skip('this machine has one core: the transport does not spin here');
  const {
    transports: [a, b],
  } = await pair();
  try {
    const message = new Uint8Array(8192).map((_, i) => (i * 7) & 255);
    let turned = false;
    setImmediate(() => {
      turned = true;
    });
    const handle = a.trySend(1, 3, message, { seq: 1, opcode: 0 });
    assert.ok(a.isDelivered(handle), 'the kernel took the frame: the sender may reuse its memory at once');
    const { seen, consume } = countingReceive(message.byteLength);
    await b.recv(0, 3, message.byteLength, 1, { seq: 1, opcode: 0 }, consume, ctx());
    assert.equal(turned, false, 'the receive ended without waiting for the event loop');
    assert.deepEqual(seen.dst, message);
  } finally {
    await a.close();
    await b.close();
  }
});

test('tcp: striped and small messages on several channels keep their order per channel', async () => {
  const {
    transports: [a, b],
  } = await pair('s', undefined, 3);
  const sizes = [10, STRIPE_MIN_BYTES * 2 + 7, 5, STRIPE_MIN_BYTES, 3];
  const sent = sizes.map((n, i) => new Uint8Array(n).fill(i + 1));
  for (const [i, m] of sent.entries()) await a.send(1, i % 2, m, { seq: i + 1, opcode: 0 }, ctx());
  for (const ch of [1, 0]) {
    for (const [i, m] of sent.entries()) {
      if (i % 2 !== ch) continue;
      const got = new Uint8Array(m.byteLength);
      await b.recv(0, ch, m.byteLength, 1, { seq: i + 1, opcode: 0 }, (p, o) => got.set(p, o), ctx());
      assert.deepEqual(got, m, `message ${i}`);
    }
  }
  await a.close();
  await b.close();
});

test('tcp: each pair of ranks shares one socket per lane, dialed by the higher rank, which both read and write', async () => {
  const store = new MemoryStore();
  const ranks = await Promise.all(
    [0, 1, 2].map((rank) =>
      TcpTransport.create({
        rank,
        nranks: 3,
        store,
        commName: 'shared',
        host: '127.0.0.1',
        timeoutMs: 20_000,
        socketsPerPeer: 2,
      }),
    ),
  );
  type Lane = { localPort?: number; remotePort?: number };
  type Inside = {
    links: { connections: { socket: Lane }[] }[];
    mesh: { addresses: Map<number, { port: number }[]> };
  };
  const inside = (t: TcpTransport) => t as unknown as Inside;
  try {
    for (const [low, high] of [
      [0, 1],
      [0, 2],
      [1, 2],
    ]) {
      const lowSide = inside(ranks[low]).links[high];
      const highSide = inside(ranks[high]).links[low];
      const listening = inside(ranks[high]).mesh.addresses.get(low)![0].port;
      for (const lane of [0, 1]) {
        const lowSocket = lowSide.connections[lane].socket;
        const highSocket = highSide.connections[lane].socket;
        assert.equal(highSocket.remotePort, listening, `rank ${high} dialed rank ${low}'s listener`);
        assert.equal(lowSocket.remotePort, highSocket.localPort, 'both ends of one connection');
        assert.equal(highSocket.remotePort, lowSocket.localPort, 'both ends of one connection');
      }
    }
    // Messages go both ways at once on every pair.
    const exchanges = [];
    for (const from of ranks)
      for (const to of ranks) {
        if (from === to) continue;
        const data = new Uint8Array(70_000).map((_, i) => (i * 7 + from.rank * 3 + to.rank) & 0xff);
        const got = new Uint8Array(data.byteLength);
        exchanges.push(
          to.recv(from.rank, 0, data.byteLength, 1, { seq: 1, opcode: 0 }, copyInto(got), ctx()).then(() => {
            assert.deepEqual(got, data, `rank ${from.rank} to rank ${to.rank}`);
          }),
          from.waitDelivered(from.trySend(to.rank, 0, data, { seq: 1, opcode: 0 }), ctx()),
        );
      }
    await Promise.all(exchanges);
  } finally {
    await Promise.all(ranks.map((t) => t.close()));
  }
});

test('tcp: ranks that disagree on sockets per peer are refused with the reason', async () => {
  const store = new MemoryStore();
  const make = (rank: number, socketsPerPeer: number) =>
    TcpTransport.create({ rank, nranks: 2, store, commName: 'k', host: '127.0.0.1', timeoutMs: 1000, socketsPerPeer });
  const results = await Promise.allSettled([make(0, 2), make(1, 1)]);
  assert.ok(results.every((r) => r.status === 'rejected'));
});

test('tcp: a peer with the wrong job token is refused before it reaches a collective', async () => {
  await assert.rejects(
    pair(undefined, ['right', 'wrong']),
    (err: { code: string; message: string }) =>
      [ErrorCode.INVALID_ARGUMENT, ErrorCode.TIMEOUT].includes(err.code as never) &&
      /refused|timed out/.test(err.message),
  );
});

test('tcp: a stranger connecting to a rank is refused and the rank keeps working', async () => {
  const store = new MemoryStore();
  const rank0 = TcpTransport.create({
    rank: 0,
    nranks: 2,
    store,
    commName: 'c',
    host: '127.0.0.1',
    token: 't',
    timeoutMs: 20_000,
  });
  const where = JSON.parse(Buffer.from(await store.get('tcp/c/0')).toString()) as { paths: { port: number }[] };
  const stranger = connect({ host: '127.0.0.1', port: where.paths[0].port });
  stranger.on('error', () => {});
  // A whole hello (56 bytes) with a bogus proof: refused for it, not left to time out reading the rest.
  stranger.on('data', () => stranger.write(Buffer.alloc(56, 7)));
  const closed = new Promise((r) => stranger.on('close', r));
  const rank1 = TcpTransport.create({
    rank: 1,
    nranks: 2,
    store,
    commName: 'c',
    host: '127.0.0.1',
    token: 't',
    timeoutMs: 20_000,
  });
  const [a, b] = await Promise.all([rank0, rank1]);
  await closed;
  const m = Uint8Array.of(1, 2, 3);
  await a.send(1, 0, m, { seq: 1, opcode: 0 }, ctx());
  let got: number[] = [];
  await b.recv(
    0,
    0,
    3,
    1,
    { seq: 1, opcode: 0 },
    (p) => {
      got = [...p];
    },
    ctx(),
  );
  assert.deepEqual(got, [1, 2, 3]);
  await a.close();
  await b.close();
});

test('tcp: a peer that goes away fails pending receives with PEER_LOST', async () => {
  const {
    transports: [a, b],
  } = await pair('s');
  const pending = b.recv(0, 0, 4, 1, { seq: 1, opcode: 0 }, () => {}, ctx());
  await new Promise((r) => setImmediate(r)); // the receive waits from its call on
  // As when rank 0's process ends: its listener goes with its sockets, so dialing it again is refused.
  const gone = a as unknown as { mesh: { close(): void }; links: { connections: { socket: { destroy(): void } }[] }[] };
  gone.mesh.close();
  gone.links[1].connections[0].socket.destroy();
  await assert.rejects(
    pending,
    (err: { code: string; message: string; details: { lost?: string } }) =>
      err.code === ErrorCode.PEER_LOST &&
      /Rank 1 lost its connection to rank 0, whose address refuses connections: its process is gone/.test(
        err.message,
      ) &&
      err.details.lost === 'process-gone',
  );
  await a.close();
  await b.close();
});

test('tcp: a peer that destroys its communicator after a striped send: the parts still on their way arrive, then receives fail with PEER_LOST', async () => {
  const {
    transports: [a, b],
  } = await pair('s', undefined, 3);
  // Lane 1 lags (as on a slow link): lane 0 brings its part, the goodbye and its close first.
  const inbound = (
    b as unknown as {
      links: {
        connections: { socket: { pause(): void; resume(): void; readableEnded: boolean; destroyed: boolean } }[];
      }[];
    }
  ).links[0].connections;
  const [lane0, lane1] = [inbound[0].socket, inbound[1].socket];
  lane1.pause();
  const sent = new Uint8Array(STRIPE_MIN_BYTES * 2).map((_, i) => (i * 7) & 255);
  await a.waitDelivered(await a.send(1, 0, sent, { seq: 1, opcode: 0 }, ctx()), ctx());
  const closing = a.close();
  await waitFor(() => lane0.readableEnded || lane0.destroyed, { what: 'lane 0 to bring the goodbye and its close' });
  setImmediate(() => lane1.resume()); // once the receive below waits
  const got = new Uint8Array(sent.byteLength);
  await b.recv(0, 0, sent.byteLength, 1, { seq: 1, opcode: 0 }, (p, o) => got.set(p, o), ctx());
  assert.deepEqual(got, sent);
  await assert.rejects(
    b.recv(0, 0, 4, 1, { seq: 2, opcode: 0 }, () => {}, ctx()),
    (err: { code: string; message: string }) =>
      err.code === ErrorCode.PEER_LOST && /rank 0 destroyed the communicator/.test(err.message),
  );
  await closing;
  await b.close();
});

test('communicator ids are stable, differ between names, and are small integers to V8 (under 2^30)', () => {
  const names = [
    'world',
    'world.warmup',
    'world.warmup-first',
    'tp',
    'dp',
    ...Array.from({ length: 200 }, (_, i) => `split-${i}`),
  ];
  const ids = names.map(commIdOf);
  for (const id of ids) assert.ok(Number.isInteger(id) && id >= 0 && id < 2 ** 30, `${id}`);
  assert.equal(new Set(ids).size, names.length);
  assert.deepEqual(names.map(commIdOf), ids);
});
