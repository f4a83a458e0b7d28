import assert from 'node:assert/strict';
import { once } from 'node:events';
import type { Socket } from 'node:net';
import { test } from 'node:test';
import { NODE_CALLS, type SocketCalls, loadFfiCalls, socketCallsFor } from '../../../src/transport/tcp/socket-calls.js';
import { socketFd } from '../../../src/transport/tcp/socket-syscall.js';
import { loopbackPair } from './loopback-pair.js';
import { ffiExpected } from '../../harness/ffi-expected.js';

/** A connected loopback pair, both ends paused so that only the calls under test read them. */
async function socketPair(): Promise<{ a: Socket; b: Socket; close: () => void }> {
  const { dialed, accepted, close } = await loopbackPair();
  dialed.pause();
  accepted.pause();
  return { a: dialed, b: accepted, close };
}

/** Reads with `calls` until `bytes` bytes are in `into`, or fails after `tries` reads that found nothing. */
function readUntil(calls: SocketCalls, fd: number, into: Uint8Array, bytes: number): number {
  let got = 0;
  for (let empty = 0; got < bytes && empty < 5_000_000; ) {
    const n = calls.read(fd, into.subarray(got));
    if (n === 0) empty++;
    got += n;
  }
  return got;
}

test('recv/send through koffi load where koffi has a prebuilt binary (elsewhere the node:fs calls serve)', (t) => {
  const ffi = loadFfiCalls();
  if (!ffiExpected) {
    t.skip(`no koffi binary expected on ${process.platform}/${process.arch} without glibc`);
    return;
  }
  assert.ok(!(ffi instanceof Error), `koffi failed to load: ${ffi instanceof Error ? ffi.message : ''}`);
  assert.equal(ffi.kind, 'ffi');
  assert.equal(socketCallsFor('ffi').kind, 'ffi');
  assert.equal(socketCallsFor('FFI').kind, 'ffi');
});

test("TSCCL_SOCKET_CALLS=node takes node:fs's calls", () => {
  assert.equal(socketCallsFor('node'), NODE_CALLS);
  assert.equal(socketCallsFor('Node').kind, 'node');
});

for (const kind of ['ffi', 'node'] as const) {
  test(`${kind} socket calls: nothing waiting reads 0, bytes land at the view's offset, the end of the stream and a closed peer read and write 0 without throwing`, async (t) => {
    const calls = kind === 'node' ? NODE_CALLS : loadFfiCalls();
    if (calls instanceof Error) {
      t.skip(`koffi unavailable here: ${calls.message}`);
      return;
    }
    const { a, b, close } = await socketPair();
    try {
      const fdA = socketFd(a)!;
      const fdB = socketFd(b)!;
      const memory = new Uint8Array(new SharedArrayBuffer(4096));
      const view = memory.subarray(100, 200);
      assert.equal(calls.read(fdB, view), 0, 'an empty socket reads 0');

      assert.equal(calls.write(fdA, Uint8Array.from([1, 2, 3, 4, 5, 6, 7, 8]).subarray(2, 6)), 4);
      assert.equal(readUntil(calls, fdB, view, 4), 4);
      assert.deepEqual(
        [...memory.subarray(98, 106)],
        [0, 0, 3, 4, 5, 6, 0, 0],
        'the bytes land in the view, nowhere else',
      );

      const start = Uint8Array.from([9, 8, 7, 6, 5]);
      assert.equal(calls.write(fdA, start, 2), 2, 'a length writes that many bytes');
      assert.equal(calls.write(fdA, start.subarray(3), 10), 2, 'never more than the memory holds');
      assert.equal(calls.write(fdA, start, -4), 0, 'a negative length writes nothing');
      const from = new Uint8Array(8);
      assert.equal(readUntil(calls, fdB, from, 4), 4);
      assert.deepEqual([...from.subarray(0, 4)], [9, 8, 6, 5]);

      const large = new Uint8Array(64 * 1024).map((_, i) => i % 251);
      let sent = 0;
      while (sent < large.byteLength) sent += calls.write(fdA, large.subarray(sent));
      const into = new Uint8Array(large.byteLength);
      assert.equal(readUntil(calls, fdB, into, large.byteLength), large.byteLength);
      assert.deepEqual(into, large);

      a.end();
      await once(b, 'end').catch(() => undefined);
      assert.equal(calls.read(fdB, view), 0, 'the end of the stream reads 0');
      assert.equal(calls.read(-1, view), 0, 'a descriptor that is not open reads 0');
      assert.equal(calls.write(-1, view), 0, 'and writes 0');
      // The peer is gone: writes fail (EPIPE or a reset), reported as 0, and nothing throws.
      a.destroy();
      let wrote = 0;
      for (let i = 0; i < 1000; i++) wrote = calls.write(fdB, view);
      assert.equal(wrote, 0, 'writes to a closed peer end as 0');
    } finally {
      close();
    }
  });
}
