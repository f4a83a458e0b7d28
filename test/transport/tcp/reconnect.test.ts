import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { Socket } from 'node:net';
import { ErrorCode, type TscclError } from '../../../src/errors.js';
import { commIdOf, type TcpTransport, type TcpTransportOptions } from '../../../src/transport/tcp/tcp-transport.js';
import { dialPeer } from '../../../src/transport/tcp/mesh.js';
import { type Consume, copyInto } from '../../../src/transport/transport.js';
import { ctx } from '../conformance.js';
import { checksummedPair } from './checksummed-pair.js';

/** Two checksummed TCP transports of one process with a job token, rank 0 and rank 1. */
const pair = (
  options: Partial<TcpTransportOptions> = {},
  perRank: [Partial<TcpTransportOptions>?, Partial<TcpTransportOptions>?] = [],
) => checksummedPair({ token: 'reconnect-secret', ...options }, perRank);

/** The parts of a transport these tests reach into: its links' sockets and where it listens. */
interface Inside {
  links: { connections: { socket: Socket }[]; held: Set<unknown> }[];
  mesh: { addresses: Map<number, { host: string; port: number }[]> };
}
const inside = (t: TcpTransport) => t as unknown as Inside;

const pattern = (bytes: number, salt: number) => {
  const data = new Uint8Array(bytes);
  for (let i = 0; i < bytes; i++) data[i] = (i * 31 + salt) & 0xff;
  return data;
};

/** Turns the event loop until `condition` holds (at most 10 s). */
async function until(condition: () => boolean, what: string): Promise<void> {
  const deadline = performance.now() + 10_000;
  while (!condition()) {
    if (performance.now() > deadline) throw new Error(`${what}: not reached in 10 s`);
    await new Promise((resolve) => setTimeout(resolve, 1));
  }
}

/** Sends `bytes` from `a` to `b` and breaks socket `lane` (`a`'s side) once `b` has read part of them. */
async function breakMidTransfer(a: TcpTransport, b: TcpTransport, bytes: number, lane: number, consume?: Consume) {
  const sent = pattern(bytes, 5);
  const got = new Uint8Array(bytes);
  const reading = inside(b).links[a.rank].connections[lane].socket;
  const readBefore = reading.bytesRead;
  const receive = b.recv(a.rank, 0, bytes, 1, { seq: 1, opcode: 0 }, consume ?? copyInto(got), ctx());
  const handle = a.trySend(b.rank, 0, sent, { seq: 1, opcode: 0 });
  await until(() => reading.bytesRead - readBefore > 64 * 1024, `rank ${b.rank} reads part of the message`);
  // A reset: what the kernels still held is lost, so the stream breaks inside the message.
  inside(a).links[b.rank].connections[lane].socket.resetAndDestroy();
  return { sent, got, receive, delivered: a.waitDelivered(handle, ctx()) };
}

/** The transfer ended with every byte in place, rank `b` having re-established the socket once. */
async function arrivedWhole(
  b: TcpTransport,
  t: { sent: Uint8Array; got: Uint8Array; receive: Promise<void>; delivered: Promise<void> },
) {
  await t.receive;
  await t.delivered;
  assert.deepEqual(t.got, t.sent);
  assert.equal(b.recoveries()[0].reconnects, 1);
}

test('tcp reconnect: a socket that breaks mid-message is dialed again, and the receive gets every byte', async () => {
  const [a, b] = await pair();
  try {
    await arrivedWhole(b, await breakMidTransfer(a, b, 32 << 20, 0));
    assert.equal(a.recoveries()[1].reconnects, 1);
    // The link goes on both ways on the new socket.
    for (const [from, to] of [
      [a, b],
      [b, a],
    ] as const) {
      const more = pattern(100_000, 9);
      const back = new Uint8Array(more.byteLength);
      const recv = to.recv(from.rank, 1, more.byteLength, 1, { seq: 2, opcode: 0 }, copyInto(back), ctx());
      await from.waitDelivered(from.trySend(to.rank, 1, more, { seq: 2, opcode: 0 }), ctx());
      await recv;
      assert.deepEqual(back, more);
    }
  } finally {
    await Promise.all([a.close(), b.close()]);
  }
});

test('tcp reconnect: messages in flight both ways when their socket breaks (reset by the rank that dialed it) each arrive whole', async () => {
  const [a, b] = await pair();
  try {
    const bytes = 32 << 20;
    const toB = pattern(bytes, 5);
    const toA = pattern(bytes, 11);
    const [gotB, gotA] = [new Uint8Array(bytes), new Uint8Array(bytes)];
    const socketOfA = inside(a).links[1].connections[0].socket;
    const socketOfB = inside(b).links[0].connections[0].socket;
    const [readByA, readByB] = [socketOfA.bytesRead, socketOfB.bytesRead];
    const receives = [
      b.recv(0, 0, bytes, 1, { seq: 1, opcode: 0 }, copyInto(gotB), ctx()),
      a.recv(1, 0, bytes, 1, { seq: 1, opcode: 0 }, copyInto(gotA), ctx()),
    ];
    const deliveries = [
      a.waitDelivered(a.trySend(1, 0, toB, { seq: 1, opcode: 0 }), ctx()),
      b.waitDelivered(b.trySend(0, 0, toA, { seq: 1, opcode: 0 }), ctx()),
    ];
    await until(
      () => socketOfA.bytesRead - readByA > 64 * 1024 && socketOfB.bytesRead - readByB > 64 * 1024,
      'both ranks read part of the message to them',
    );
    // Rank 1 (the higher rank) dialed the pair's socket: it breaks it, and dials it again.
    inside(b).links[0].connections[0].socket.resetAndDestroy();
    await Promise.all([...receives, ...deliveries]);
    assert.deepEqual(gotB, toB);
    assert.deepEqual(gotA, toA);
    assert.equal(a.recoveries()[1].reconnects, 1);
    assert.equal(b.recoveries()[0].reconnects, 1);
  } finally {
    await Promise.all([a.close(), b.close()]);
  }
});

test('tcp reconnect: a frame held back for its receive when its socket breaks goes to the receive posted before the socket is back', async () => {
  const [a, b] = await pair();
  try {
    // Large enough to be held in its socket while no receive is posted (hold.ts).
    const bytes = 1 << 20;
    const sent = pattern(bytes, 3);
    const got = new Uint8Array(bytes);
    const delivered = a.waitDelivered(a.trySend(1, 0, sent, { seq: 1, opcode: 0 }), ctx());
    const link = inside(b).links[0];
    await until(() => link.held.size > 0, 'rank 1 holds the frame back for its receive');
    const socket = link.connections[0].socket;
    // Posted once rank 1 has seen the break (its reader's 'close' listener came first), while
    // its socket is being dialed again: the receive must not be taken by the broken socket.
    const receive = new Promise<void>((resolve, reject) => {
      socket.once('close', () => {
        b.recv(0, 0, bytes, 1, { seq: 1, opcode: 0 }, copyInto(got), ctx(10_000)).then(resolve, reject);
      });
    });
    socket.resetAndDestroy();
    await arrivedWhole(b, { sent, got, receive, delivered });
  } finally {
    await Promise.all([a.close(), b.close()]);
  }
});

test('tcp reconnect: with 3 sockets per peer, a striped message survives the loss of one of them', async () => {
  const [a, b] = await pair({ socketsPerPeer: 3 });
  try {
    await arrivedWhole(b, await breakMidTransfer(a, b, 48 << 20, 1));
  } finally {
    await Promise.all([a.close(), b.close()]);
  }
});

// Either side's frame can be the one that cannot go on: the accepting rank (rank 0) then refuses
// the new socket's hello, the dialing rank (rank 1) says so in its confirmation.
for (const sender of [0, 1]) {
  test(`tcp reconnect: rank ${sender}'s frame without a checksum cannot be carried again, so both ranks lose the link and say why`, async () => {
    const ranks = await pair({ checksum: false });
    const [from, to] = sender === 0 ? ranks : [ranks[1], ranks[0]];
    try {
      const { receive, delivered } = await breakMidTransfer(from, to, 32 << 20, 0);
      delivered.catch(() => {}); // taken by the socket before the reset, or lost with the link
      const lostWhy = (err: TscclError) =>
        err.code === ErrorCode.PEER_LOST &&
        /cannot go on .*from frame \d+/.test(err.message) &&
        err.details.lost === 'cannot-resume';
      await assert.rejects(receive, lostWhy);
      await assert.rejects(
        from.recv(to.rank, 0, 4, 1, { seq: 2, opcode: 0 }, () => {}, ctx()),
        lostWhy,
      );
      assert.equal(to.recoveries()[from.rank].reconnects, 0);
    } finally {
      await Promise.all(ranks.map((t) => t.close()));
    }
  });
}

test('tcp reconnect: a rank that waits for its peer to dial again loses the link after TSCCL_RECONNECT_MS', async () => {
  // Rank 1 never dials again (reconnection off there): rank 0 gives up after its grace period.
  const [a, b] = await pair({}, [{ reconnectMs: 300 }, { reconnectMs: 0 }]);
  try {
    const pending = a.recv(1, 0, 4, 1, { seq: 1, opcode: 0 }, () => {}, ctx());
    inside(b).links[0].connections[0].socket.destroy();
    await assert.rejects(
      pending,
      (err: TscclError) =>
        err.code === ErrorCode.PEER_LOST &&
        /not re-established within 300 ms \(TSCCL_RECONNECT_MS\)/.test(err.message) &&
        err.details.lost === 'not-reestablished',
    );
  } finally {
    await Promise.all([a.close(), b.close()]);
  }
});

test('tcp reconnect: a hello that would replace a socket without the job token is refused, and the link goes on', async () => {
  const [a, b] = await pair({ commName: 'forged-hello' });
  try {
    const [where] = inside(b).mesh.addresses.get(0)!;
    const forged = dialPeer(
      where,
      { peer: 0, lane: 0, resumeFrom: 1 },
      {
        rank: 1,
        nranks: 2,
        token: 'not-the-job-token',
        commId: commIdOf('forged-hello'),
        lanes: 1,
        timeoutMs: 5000,
        readBuffer: new Uint8Array(1024),
      },
    );
    await assert.rejects(forged, (err: TscclError) => /refused rank 1's connection/.test(err.message));
    const sent = pattern(10_000, 3);
    const got = new Uint8Array(sent.byteLength);
    const recv = b.recv(0, 0, sent.byteLength, 1, { seq: 1, opcode: 0 }, copyInto(got), ctx());
    await a.waitDelivered(a.trySend(1, 0, sent, { seq: 1, opcode: 0 }), ctx());
    await recv;
    assert.deepEqual(got, sent);
    assert.equal(a.recoveries()[1].reconnects, 0);
  } finally {
    await Promise.all([a.close(), b.close()]);
  }
});
