import assert from 'node:assert/strict';
import { connect } from 'node:net';
import { test } from 'node:test';
import { ErrorCode } from '../../../src/errors.js';
import { MemoryStore } from '../../../src/store/memory-store.js';
import { TcpTransport } from '../../../src/transport/tcp/tcp-transport.js';
import { ctx, transportConformance } from '../conformance.js';

const pair = async (token?: string, tokens: [string?, string?] = [token, token]) => {
  const store = new MemoryStore();
  const make = (rank: number) => TcpTransport.create({ rank, nranks: 2, store, commName: 'test', host: '127.0.0.1', token: tokens[rank], timeoutMs: 2000 });
  return { store, transports: await Promise.all([make(0), make(1)]) };
};

transportConformance('tcp', async () => {
  const { transports: [a, b] } = await pair('job-secret');
  return { a, b, sendable: (n) => new Uint8Array(n), close: async () => { await a.close(); await b.close(); } };
});

test('tcp: a peer with the wrong job token is refused before it reaches a collective', async () => {
  await assert.rejects(pair(undefined, ['right', 'wrong']), (err: { code: string; message: string }) =>
    [ErrorCode.INVALID_ARGUMENT, ErrorCode.TIMEOUT].includes(err.code as never) && /refused|timed out/.test(err.message));
});

test('tcp: a stranger connecting to a rank is refused and the rank keeps working', async () => {
  const store = new MemoryStore();
  const rank0 = TcpTransport.create({ rank: 0, nranks: 2, store, commName: 'c', host: '127.0.0.1', token: 't', timeoutMs: 3000 });
  const where = JSON.parse(Buffer.from(await store.get('tcp/c/0')).toString()) as { port: number };
  const stranger = connect({ host: '127.0.0.1', port: where.port });
  stranger.on('error', () => {});
  stranger.on('data', () => stranger.write(Buffer.alloc(40, 7))); // a hello with a bogus proof
  const closed = new Promise((r) => stranger.on('close', r));
  const rank1 = TcpTransport.create({ rank: 1, nranks: 2, store, commName: 'c', host: '127.0.0.1', token: 't', timeoutMs: 3000 });
  const [a, b] = await Promise.all([rank0, rank1]);
  await closed;
  const m = Uint8Array.of(1, 2, 3);
  await a.send(1, 0, m, { seq: 1, opcode: 0 }, ctx());
  let got: number[] = [];
  await b.recv(0, 0, 3, 1, { seq: 1, opcode: 0 }, (p) => { got = [...p]; }, ctx());
  assert.deepEqual(got, [1, 2, 3]);
  await a.close();
  await b.close();
});

test('tcp: a peer that goes away fails pending receives with PEER_LOST', async () => {
  const { transports: [a, b] } = await pair('s');
  const pending = b.recv(0, 0, 4, 1, { seq: 1, opcode: 0 }, () => {}, ctx(5000));
  await new Promise((r) => setTimeout(r, 20));
  (a as unknown as { links: { socket?: { destroy(): void } }[] }).links[1].socket?.destroy();
  await assert.rejects(pending, (err: { code: string; message: string }) => err.code === ErrorCode.PEER_LOST && /Rank 1 lost its connection to rank 0/.test(err.message));
  await a.close();
  await b.close();
});
