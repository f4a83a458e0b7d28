import assert from 'node:assert/strict';
import { connect } from 'node:net';
import { test } from 'node:test';
import { crc32 } from 'node:zlib';
import { TscclError } from '../../src/errors.js';
import { TcpStoreClient } from '../../src/store/tcp-store-client.js';
import { FrameDecoder, Op, decodeRequest, decodeResponse, encodeRequest } from '../../src/store/tcp-store-protocol.js';
import { TcpStoreServer } from '../../src/store/tcp-store-server.js';
import { FrameParser, bufferingSink, encodeHeader } from '../../src/transport/tcp/frame.js';
import { proveToken } from '../../src/security/job-token.js';

/** A small deterministic PRNG (mulberry32), so a failing case can be replayed from its seed. */
function random(seed: number): () => number {
  return () => {
    seed = (seed + 0x6d2b79f5) | 0;
    let t = Math.imul(seed ^ (seed >>> 15), 1 | seed);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const CASES = 20_000;
// The server logs every client it refuses; here that is hundreds of expected lines.
process.env.TSCCL_DEBUG = 'NONE';

function mutate(next: () => number, valid: Buffer): Buffer {
  const b = Buffer.from(valid);
  switch (Math.floor(next() * 4)) {
    case 0:
      return b.subarray(0, Math.floor(next() * b.byteLength)); // truncated
    case 1: {
      for (let k = 0; k < 3; k++) b[Math.floor(next() * b.byteLength)] = Math.floor(next() * 256);
      return b;
    } // flipped bytes
    case 2: {
      b.writeUInt32LE(Math.floor(next() * 0xffffffff), 0);
      return b;
    } // any length prefix
    default:
      return Buffer.from(Array.from({ length: Math.floor(next() * 64) }, () => Math.floor(next() * 256))); // noise
  }
}

test(`store protocol decoders: ${CASES} random, truncated, mutated and oversized inputs fail only with TscclError`, () => {
  const next = random(7);
  const valid = [
    encodeRequest({ op: Op.SET, id: 1, key: 'k', value: Buffer.from('value') }),
    encodeRequest({ op: Op.WAIT, id: 2, timeoutMs: 10, keys: ['a', 'bb'] }),
    encodeRequest({ op: Op.COMPARE_SET, id: 3, key: 'c', expected: Buffer.alloc(0), desired: Buffer.from('x') }),
  ];
  let refused = 0;
  for (let i = 0; i < CASES; i++) {
    const input = mutate(next, valid[i % valid.length]);
    try {
      for (const body of new FrameDecoder(1 << 16).push(input)) {
        decodeRequest(body);
        decodeResponse(body);
      }
    } catch (err) {
      assert.ok(err instanceof TscclError, `case ${i} threw ${String(err)}`);
      refused++;
    }
  }
  assert.ok(refused > CASES / 10, `only ${refused} inputs refused: the mutations are too gentle`);
});

test(`TCP frame parser: ${CASES} random and corrupted streams fail only with TscclError`, () => {
  const next = random(11);
  const payload = Buffer.from('a payload of some length');
  const valid = Buffer.concat([
    encodeHeader({
      flags: 1,
      channel: 0,
      commId: 5,
      seq: 1,
      opcode: 0,
      length: payload.byteLength,
      checksum: crc32(payload),
    }),
    payload,
  ]);
  let refused = 0;
  for (let i = 0; i < CASES; i++) {
    const parser = new FrameParser(1 << 16, { crc32 });
    try {
      parser.push(mutate(next, valid), (h) => bufferingSink(h, () => {}));
    } catch (err) {
      assert.ok(err instanceof TscclError, `case ${i} threw ${String(err)}`);
      refused++;
    }
  }
  assert.ok(refused > CASES / 10);
});

test('a live store server survives clients sending garbage and replayed handshakes, and keeps serving', async () => {
  const server = await TcpStoreServer.listen({ token: 'secret' });
  const good = await TcpStoreClient.connect({ host: '127.0.0.1', port: server.port, token: 'secret' });
  try {
    const next = random(3);
    // Record what an authenticated client sends, to replay it later against a fresh nonce.
    let recorded: Buffer = Buffer.alloc(0);
    await new Promise<void>((resolve) => {
      const spy = connect({ host: '127.0.0.1', port: server.port });
      spy.on('data', (d) => {
        if (recorded.byteLength === 0 && d.byteLength >= 22) {
          // A genuine proof for this connection's nonce: accepted here, worthless anywhere else.
          recorded = encodeRequest({ op: Op.AUTH, id: 0, mac: proveToken('secret', 'tsccl-store', d.subarray(6, 22)) });
          spy.write(recorded);
        } else if (decodeResponse(new FrameDecoder().push(d)[0]).status === 0) {
          spy.destroy(); // authenticated: now replay the same bytes elsewhere
        }
      });
      spy.on('close', () => resolve());
      spy.on('error', () => {});
    });
    const replies: Buffer[] = [];
    const attempts = Array.from(
      { length: 40 },
      (_, i) =>
        new Promise<void>((resolve) => {
          const s = connect({ host: '127.0.0.1', port: server.port });
          let got = Buffer.alloc(0);
          s.on('data', (d) => {
            got = Buffer.concat([got, d]);
          });
          s.on('error', () => {});
          s.on('close', () => {
            if (i % 2 === 0) replies.push(got);
            resolve();
          });
          s.on('connect', () => {
            const junk =
              i % 2 === 0 ? recorded : Buffer.from(Array.from({ length: 200 }, () => Math.floor(next() * 256)));
            // Then end: the server reads the junk before the end, so it has answered (or refused) by
            // the time the connection closes, however late it gets to it.
            s.end(junk);
          });
        }),
    );
    await Promise.all(attempts);
    await good.set('still', Buffer.from('serving'));
    assert.equal(Buffer.from(await good.get('still')).toString(), 'serving');
    // Every replayed proof is answered AUTH_FAILED: the nonce differs on every connection.
    assert.equal(replies.length, 20);
    for (const reply of replies) assert.equal(decodeResponse(new FrameDecoder().push(reply.subarray(22))[0]).status, 3);
    assert.ok(server.refused >= 30, `refused ${server.refused}`);
  } finally {
    await good.close();
    await server.close();
  }
});

test('the store refuses connections beyond its limit and values beyond the size limit, with clear errors', async () => {
  const server = await TcpStoreServer.listen({ maxConnections: 1 });
  const first = await TcpStoreClient.connect({ host: '127.0.0.1', port: server.port });
  try {
    await assert.rejects(TcpStoreClient.connect({ host: '127.0.0.1', port: server.port, connectTimeoutMs: 500 }));
    await assert.rejects(first.set('big', new Uint8Array(65 * 1024 * 1024)), /exceeds the limit/);
  } finally {
    await first.close();
    await server.close();
  }
});
