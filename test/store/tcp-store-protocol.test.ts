import assert from 'node:assert/strict';
import { connect } from 'node:net';
import { test } from 'node:test';
import { ErrorCode } from '../../src/errors.js';
import { TcpStoreClient } from '../../src/store/tcp-store-client.js';
import {
  FrameDecoder,
  GREETING_BYTES,
  Op,
  Status,
  decodeRequest,
  decodeResponse,
  encodeGreeting,
  encodeRequest,
} from '../../src/store/tcp-store-protocol.js';
import { TcpStoreServer } from '../../src/store/tcp-store-server.js';

test('requests encode to the documented bytes', () => {
  assert.deepEqual(
    [...encodeRequest({ op: Op.SET, id: 7, key: 'ab', value: Uint8Array.of(1, 2, 3) })],
    [
      18,
      0,
      0,
      0, // body length: 1 + 4 + (4 + 2) + (4 + 3)
      2,
      7,
      0,
      0,
      0, // SET, id 7
      2,
      0,
      0,
      0,
      0x61,
      0x62, // key "ab"
      3,
      0,
      0,
      0,
      1,
      2,
      3, // value
    ],
  );
  assert.deepEqual(
    [...encodeRequest({ op: Op.WAIT, id: 1, timeoutMs: 500, keys: ['k'] })],
    [18, 0, 0, 0, 4, 1, 0, 0, 0, 0xf4, 1, 0, 0, 1, 0, 0, 0, 1, 0, 0, 0, 0x6b],
  );
  assert.deepEqual([...encodeGreeting(true, new Uint8Array(16).fill(9))].slice(0, 6), [0x54, 0x53, 0x53, 0x54, 1, 1]);
});

test('the frame decoder handles byte-by-byte and many-frames-at-once input alike', () => {
  const frames = Buffer.concat([
    encodeRequest({ op: Op.GET, id: 1, timeoutMs: 10, key: 'x' }),
    encodeRequest({ op: Op.DELETE, id: 2, key: 'y' }),
  ]);
  const whole = new FrameDecoder().push(frames);
  const bytewise = new FrameDecoder();
  const pieces = [...frames].flatMap((b) => bytewise.push(Uint8Array.of(b)));
  assert.equal(whole.length, 2);
  assert.deepEqual(pieces, whole);
  assert.deepEqual(decodeRequest(whole[0]), { op: Op.GET, id: 1, timeoutMs: 10, key: 'x' });
  assert.deepEqual(decodeRequest(whole[1]), { op: Op.DELETE, id: 2, key: 'y' });
});

test('malformed, truncated and oversized input is refused with an error', () => {
  assert.throws(() => new FrameDecoder(1024).push(Uint8Array.of(0xff, 0xff, 0xff, 0x7f)), /exceeds the limit of 1024/);
  assert.throws(() => decodeRequest(Uint8Array.of(2, 1, 0, 0, 0, 5, 0, 0, 0, 0x61)), /truncated frame/);
  assert.throws(() => decodeRequest(Uint8Array.of(99, 1, 0, 0, 0)), /unknown op 99/);
  assert.throws(() => decodeRequest(Uint8Array.of(7, 1, 0, 0, 0, 0, 0, 0, 0)), /empty key/);
  assert.throws(
    () => decodeRequest(Buffer.concat([encodeRequest({ op: Op.DELETE, id: 2, key: 'y' }).subarray(4), Buffer.of(0)])),
    /trailing/,
  );
  assert.throws(() => decodeResponse(Uint8Array.of(9, 0, 0, 0, 0)), /unknown status 9/);
});

/** Opens a raw socket, reads the greeting, and lets the test speak bytes. */
async function raw(port: number): Promise<{ send: (b: Uint8Array) => void; closed: Promise<Buffer> }> {
  const socket = connect({ host: '127.0.0.1', port });
  const received: Buffer[] = [];
  const closed = new Promise<Buffer>((resolve) => socket.on('close', () => resolve(Buffer.concat(received))));
  socket.on('data', (d) => received.push(d));
  socket.on('error', () => {});
  await new Promise((r) => socket.once('connect', r));
  return { send: (b) => socket.write(b), closed };
}

test('the server drops clients that break the protocol or fail authentication, and keeps serving the others', async () => {
  const server = await TcpStoreServer.listen({ token: 'right' });
  const good = await TcpStoreClient.connect({ host: '127.0.0.1', port: server.port, token: 'right' });
  try {
    const pending = good.get('later', { timeoutMs: 30_000 });

    const garbage = await raw(server.port);
    garbage.send(Buffer.from('GET / HTTP/1.1\r\n\r\n'));
    const garbageReply = await garbage.closed;
    assert.ok(garbageReply.byteLength >= GREETING_BYTES);

    const unauthenticated = await raw(server.port);
    unauthenticated.send(encodeRequest({ op: Op.SET, id: 1, key: 'evil', value: Uint8Array.of(1) }));
    const reply = await unauthenticated.closed;
    assert.equal(
      decodeResponse(new FrameDecoder().push(reply.subarray(GREETING_BYTES))[0]).status,
      Status.NOT_AUTHENTICATED,
    );

    const truncated = await raw(server.port);
    truncated.send(Uint8Array.of(200, 0, 0, 0, 1));
    await new Promise((r) => setTimeout(r, 50)); // a chance to choke on it; the server must serve on whenever it reads it

    await assert.rejects(
      TcpStoreClient.connect({ host: '127.0.0.1', port: server.port, token: 'wrong' }),
      (err: { code: string; message: string }) =>
        err.code === ErrorCode.INVALID_ARGUMENT && /refused this client: wrong job token/.test(err.message),
    );
    await assert.rejects(TcpStoreClient.connect({ host: '127.0.0.1', port: server.port }), /requires the job token/);

    await good.set('later', Uint8Array.of(42));
    assert.deepEqual([...(await pending)], [42]);
    assert.ok(server.refused >= 3, `refused ${server.refused}`);
    await assert.rejects(good.get('evil', { timeoutMs: 50 }), { code: ErrorCode.TIMEOUT }); // the unauthenticated SET never landed
  } finally {
    await good.close();
    await server.close();
  }
});

test('a client started before its server connects once the server is up', async () => {
  const probe = await TcpStoreServer.listen({});
  const port = probe.port;
  await probe.close();
  const connecting = TcpStoreClient.connect({ host: '127.0.0.1', port, connectTimeoutMs: 30_000 });
  await new Promise((r) => setTimeout(r, 200)); // the scenario: the server comes up later (its first attempts fail)
  const server = await TcpStoreServer.listen({ port });
  const client = await connecting;
  await client.set('k', Uint8Array.of(1));
  await client.close();
  await server.close();
});
