import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import type { Socket } from 'node:net';
import { test } from 'node:test';
import { Intake, readInto, readNow } from '../../../src/transport/tcp/intake.js';
import { waitFor } from '../../harness/wait-for.js';
import { loopbackPair } from './loopback-pair.js';

test('intake: bytes that come before a handler are kept, copied, and handed over first, in order', () => {
  const intake = new Intake();
  const reused = Buffer.from([1, 2, 3]); // a Buffer's slice() would be a view, not a copy
  intake.feed(reused);
  reused.set([4, 5, 6]); // the read buffer is reused by the next read
  intake.feed(reused);
  const seen: number[] = [];
  intake.attach((bytes) => seen.push(...bytes));
  intake.feed(new Uint8Array([7]));
  assert.deepEqual(seen, [1, 2, 3, 4, 5, 6, 7]);
});

test('intake: reads fed from one memory come as one view while they fill the same bytes, as a new one otherwise, and early ones are copies', () => {
  const intake = new Intake();
  const memory = Uint8Array.from({ length: 16 }, (_, i) => i);
  intake.feedRead(memory, 4);
  const seen: Uint8Array[] = [];
  const bytes: number[][] = [];
  intake.attach((view) => {
    seen.push(view);
    bytes.push([...view]);
  });
  assert.notEqual(seen[0].buffer, memory.buffer, 'a read kept before a handler is a copy');
  intake.feedRead(memory, 4);
  memory[0] = 99;
  intake.feedRead(memory, 4);
  intake.feedRead(memory, 2);
  intake.feedRead(memory.subarray(8), 2);
  assert.equal(seen[1].buffer, memory.buffer, 'a read is fed in place');
  assert.equal(seen[2], seen[1], 'the same bytes read again: the same view');
  assert.notEqual(seen[3], seen[2], 'another length: another view');
  assert.notEqual(seen[4], seen[3], 'other memory: another view');
  assert.deepEqual(bytes, [
    [0, 1, 2, 3],
    [0, 1, 2, 3],
    [99, 1, 2, 3],
    [99, 1],
    [8, 9],
  ]);
});

test('intake: a handler that detaches with the rest of a chunk leaves it first in line for the next', () => {
  const intake = new Intake();
  const first: number[] = [];
  intake.attach((bytes) => {
    first.push(bytes[0], bytes[1]);
    intake.detach(bytes.subarray(2));
  });
  intake.feed(new Uint8Array([1, 2, 3, 4]));
  intake.feed(new Uint8Array([5]));
  const second: number[] = [];
  intake.attach((bytes) => second.push(...bytes));
  assert.deepEqual(first, [1, 2]);
  assert.deepEqual(second, [3, 4, 5]);
});

/**
 * A socket that reads through readInto into a 64-byte buffer, its intake (whose handler records
 * every byte in `seen`), and the socket that writes to it.
 */
async function readingPair() {
  const buffer = new Uint8Array(64);
  const intake = new Intake();
  const seen: number[] = [];
  intake.attach((bytes) => seen.push(...bytes));
  const { dialed: reader, accepted: writer, close } = await loopbackPair(readInto(buffer, intake).onread);
  writer.setNoDelay(true);
  return { buffer, intake, seen, reader, writer, close };
}

/** readNow until `want` bytes came (loopback hands them over within microseconds), at most `tries` times; undefined if it may not read. */
function readNowUntil(
  reader: Socket,
  buffer: Uint8Array,
  intake: Intake,
  want: number,
  tries = 100000,
): number | undefined {
  let got = 0;
  for (let i = 0; i < tries && got < want; i++) {
    const read = readNow(reader, buffer, intake);
    if (read === undefined) return undefined;
    got += read;
  }
  return got;
}

test("readNow: takes what the socket holds at once, in order with Node's own reads, and finds nothing without throwing", async () => {
  const { buffer, intake, seen, reader, writer, close } = await readingPair();
  try {
    const stackTraceLimit = Error.stackTraceLimit;
    assert.equal(readNow(reader, buffer, intake), 0, 'nothing sent yet');
    assert.equal(Error.stackTraceLimit, stackTraceLimit);
    writer.write(Buffer.from([1, 2, 3]));
    await waitFor(() => seen.length === 3, { what: 'Node to read them itself' });
    writer.write(Buffer.from([4, 5, 6, 7]));
    assert.equal(readNowUntil(reader, buffer, intake, 4), 4);
    assert.deepEqual(seen, [1, 2, 3, 4, 5, 6, 7]);
    writer.write(Buffer.from([8]));
    await waitFor(() => seen.length === 8, { what: 'Node to read on' });
    assert.deepEqual(seen, [1, 2, 3, 4, 5, 6, 7, 8], 'Node reads on after it');
  } finally {
    close();
  }
});

test("readNow: leaves the socket to Node while its next read goes to a receiver's memory, or while nobody listens", async () => {
  const { buffer, intake, seen, reader, writer, close } = await readingPair();
  const destination = new Uint8Array(64);
  try {
    // Node asks for the next read's memory after a read: from then on it holds the destination.
    intake.placement = () => destination;
    writer.write(Buffer.from([1]));
    await waitFor(() => seen.length === 1 && intake.nextRead === destination, {
      what: 'Node to read and take the destination for its next read',
    });
    writer.write(Buffer.from([2, 3])); // no turn of the event loop from here: Node cannot read them first
    assert.equal(
      readNowUntil(reader, buffer, intake, 1, 1000),
      undefined,
      'a read now would put later bytes behind what lands in the destination',
    );
    intake.placement = undefined;
    await waitFor(() => seen.length === 3, { what: 'Node to read into the destination' });
    assert.deepEqual(seen, [1, 2, 3]);
    assert.deepEqual([...destination.subarray(0, 2)], [2, 3], 'Node read them into the memory it held');
    intake.detach();
    writer.write(Buffer.from([4]));
    assert.equal(readNowUntil(reader, buffer, intake, 1, 1000), undefined, 'nobody listens');
    reader.pause();
    intake.attach((bytes) => seen.push(...bytes));
    assert.equal(readNowUntil(reader, buffer, intake, 1, 1000), undefined, 'the socket is paused');
    reader.resume();
    await waitFor(() => seen.length === 4, { what: 'the resumed socket to read' });
    assert.deepEqual(seen, [1, 2, 3, 4]);
  } finally {
    close();
  }
});

test('readNow: works where the intrinsics are frozen (Error.stackTraceLimit cannot be written)', () => {
  const intake = new URL('../../../src/transport/tcp/intake.js', import.meta.url).href;
  const script = `
    import net from 'node:net';
    import { Intake, readInto, readNow } from ${JSON.stringify(intake)};
    const server = net.createServer(() => {}).listen(0, '127.0.0.1', () => {
      const buffer = new Uint8Array(64);
      const intake = new Intake();
      intake.attach(() => {});
      const socket = net.connect({ host: '127.0.0.1', port: server.address().port, ...readInto(buffer, intake) }, () => {
        console.log(readNow(socket, buffer, intake));
        socket.destroy();
        server.close();
      });
    });`;
  const out = execFileSync(
    process.execPath,
    ['--frozen-intrinsics', '--no-warnings', '--input-type=module', '-e', script],
    { encoding: 'utf8', timeout: 60_000 },
  );
  assert.equal(out.trim(), '0', 'nothing waiting, and no TypeError from writing a frozen property');
});
