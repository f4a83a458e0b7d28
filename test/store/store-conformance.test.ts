import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { ErrorCode } from '../../src/errors.js';
import { FileStore } from '../../src/store/file-store.js';
import { MemoryStore } from '../../src/store/memory-store.js';
import { PrefixStore, type Store } from '../../src/store/store.js';
import { TcpStoreClient } from '../../src/store/tcp-store-client.js';
import { TcpStoreServer } from '../../src/store/tcp-store-server.js';

const bytes = (s: string) => new Uint8Array(Buffer.from(s));
const text = (b: Uint8Array) => Buffer.from(b).toString();

interface Kind {
  name: string;
  open: () => Promise<{ a: Store; b: Store; close: () => Promise<void> }>;
}

const kinds: Kind[] = [
  {
    name: 'memory',
    open: async () => {
      const s = new MemoryStore();
      return { a: s, b: s, close: () => s.close() };
    },
  },
  {
    name: 'tcp',
    open: async () => {
      const server = await TcpStoreServer.listen({ token: 'secret' });
      const a = await TcpStoreClient.connect({ host: '127.0.0.1', port: server.port, token: 'secret' });
      const b = await TcpStoreClient.connect({ host: '127.0.0.1', port: server.port, token: 'secret' });
      return {
        a,
        b,
        close: async () => {
          await a.close();
          await b.close();
          await server.close();
        },
      };
    },
  },
  {
    name: 'file',
    open: async () => {
      const dir = await mkdtemp(join(tmpdir(), 'tsccl-store-'));
      const a = await FileStore.open(dir);
      const b = await FileStore.open(dir);
      return { a, b, close: () => rm(dir, { recursive: true, force: true }) };
    },
  },
];

for (const kind of kinds) {
  test(`${kind.name} store: set/get/wait/add/compareSet/delete, waits woken by another client`, async () => {
    const { a, b, close } = await kind.open();
    try {
      const pending = b.get('late', { timeoutMs: 30_000 });
      // A request b makes after its get is answered after it: the get waits by then (a server
      // serves a client's requests in order), so the set below wakes a waiting get.
      await b.set('after-get', bytes('ordered'));
      await a.set('late', bytes('arrived'));
      assert.equal(text(await pending), 'arrived');
      await b.set('k1', bytes('v1'));
      await a.wait(['k1', 'late'], { timeoutMs: 30_000 });
      assert.equal(await a.add('counter', 5), 5);
      assert.equal(await b.add('counter', -2), 3);
      const counted = await Promise.all(Array.from({ length: 10 }, (_, i) => (i % 2 ? a : b).add('race', 1)));
      assert.deepEqual(
        [...counted].sort((x, y) => x - y),
        [1, 2, 3, 4, 5, 6, 7, 8, 9, 10],
      );
      assert.equal(text(await a.compareSet('cas', new Uint8Array(0), bytes('first'))), 'first');
      assert.equal(text(await b.compareSet('cas', bytes('wrong'), bytes('second'))), 'first');
      assert.equal(text(await b.compareSet('cas', bytes('first'), bytes('second'))), 'second');
      assert.equal(await a.delete('cas'), true);
      assert.equal(await a.delete('cas'), false);
      const big = new Uint8Array(1 << 20).map((_, i) => i & 255);
      await a.set('big', big);
      assert.deepEqual(await b.get('big'), big);
      const prefixed = new PrefixStore('job7', a);
      await prefixed.set('x', bytes('in job 7'));
      assert.equal(text(await b.get('job7/x')), 'in job 7');
      await assert.rejects(a.get('never', { timeoutMs: 100 }), { code: ErrorCode.TIMEOUT });
      const controller = new AbortController();
      setTimeout(() => controller.abort(), 50);
      await assert.rejects(a.wait(['never'], { timeoutMs: 5000, signal: controller.signal }), {
        code: ErrorCode.ABORTED,
      });
      await assert.rejects(a.set('', bytes('x')), { code: ErrorCode.INVALID_ARGUMENT });
    } finally {
      await close();
    }
  });
}
