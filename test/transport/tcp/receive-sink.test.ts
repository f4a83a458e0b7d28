import assert from 'node:assert/strict';
import { test } from 'node:test';
import { encodeHeader } from '../../../src/transport/tcp/frame.js';
import { streamingSink } from '../../../src/transport/tcp/receive-sink.js';
import { copyInto } from '../../../src/transport/transport.js';

/** One memory holding a streaming sink's read buffer and align buffer, apart, as a transport's arena does. */
function sinkMemory(): { memory: Uint8Array; buffers: { read: Uint8Array; align: Uint8Array } } {
  const memory = new Uint8Array(4096);
  return { memory, buffers: { read: memory.subarray(0, 1024), align: memory.subarray(2048, 3072) } };
}

test('tcp: a reduction whose reads end inside an element gets every later piece aligned in the read memory, with no copy for alignment', () => {
  const { memory, buffers } = sinkMemory();
  const message = new Uint8Array(4000).map((_, i) => (i * 29 + 3) & 255);
  const received = new Uint8Array(message.byteLength);
  const pieces: Uint8Array[] = [];
  let ended = false;
  const consume = (piece: Uint8Array, offset: number) => {
    pieces.push(piece);
    received.set(piece, offset);
  };
  const sink = streamingSink({ elementBytes: 4, consume, cancelled: false }, buffers, () => {
    ended = true;
  });
  // Reads of odd lengths, as loopback hands out its 65483-byte segments: each goes where the sink places it.
  let sent = 0;
  for (const length of [7, 333, 1021, 2, 1, 999, 637]) {
    const place = sink.place!(message.byteLength - sent) ?? buffers.read;
    const n = Math.min(length, place.byteLength, message.byteLength - sent);
    place.set(message.subarray(sent, sent + n));
    sink.payload(place.subarray(0, n));
    sent += n;
  }
  // The rest comes from elsewhere (a frame buffered before its receive), at an odd address: copied to be aligned.
  const elsewhere = new Uint8Array(message.byteLength + 1).subarray(1);
  elsewhere.set(message.subarray(sent), 0);
  sink.payload(elsewhere.subarray(0, message.byteLength - sent));
  sink.end();
  assert.ok(ended);
  assert.deepEqual(received, message);
  for (const piece of pieces)
    assert.equal(piece.byteOffset % 4, 0, 'every piece is whole elements at an aligned address');
  const bytesWithin = (region: Uint8Array) =>
    pieces
      .filter(
        (p) =>
          p.buffer === memory.buffer &&
          p.byteOffset >= region.byteOffset &&
          p.byteOffset < region.byteOffset + region.byteLength,
      )
      .reduce((sum, p) => sum + p.byteLength, 0);
  const [fromReads, fromAlign] = [bytesWithin(buffers.read), bytesWithin(buffers.align)];
  assert.equal(fromReads, Math.floor(sent / 4) * 4, 'every read element was handed over from the read memory');
  assert.ok(
    fromAlign > 0 && fromAlign <= message.byteLength - sent + 3,
    `only the piece from elsewhere was copied (${fromAlign} bytes)`,
  );
});

test('tcp: a plain receive whose reads end inside an element keeps reading straight into its destination', () => {
  // Loopback hands out 65483-byte segments, so reads end inside float32 elements. Copying needs
  // no whole elements: were the rest carried as a reduction's is, every later read of the frame
  // would land in the read memory and be copied twice (2 processes, 4 MiB: 1.9 ms an exchange against 1.3).
  const { buffers } = sinkMemory();
  const message = new Uint8Array(1000).map((_, i) => (i * 7 + 1) & 255);
  const destination = new Uint8Array(message.byteLength);
  const pieces: Uint8Array[] = [];
  const copy = copyInto(destination);
  const consume = Object.assign(
    (piece: Uint8Array, offset: number) => {
      pieces.push(piece);
      copy(piece, offset);
    },
    { into: destination },
  );
  const sink = streamingSink({ elementBytes: 4, consume, cancelled: false }, buffers, () => undefined);
  let sent = 0;
  for (const length of [7, 333, 1, 659]) {
    const place = sink.place!(message.byteLength - sent);
    assert.ok(
      place !== undefined && place.buffer === destination.buffer && place.byteOffset === sent,
      `read ${sent} goes to its place in the destination`,
    );
    place.set(message.subarray(sent, sent + length));
    sink.payload(place.subarray(0, length));
    sent += length;
  }
  sink.end();
  assert.deepEqual(destination, message);
  assert.ok(
    pieces.every((p) => p.buffer === destination.buffer),
    'nothing went through the read or align memory',
  );
});

test("tcp: a reduction's carried bytes survive another socket's read into the shared read memory between its placement and its read", () => {
  // Node asks a socket for its next read's memory right after its previous read, and every
  // inbound socket of a transport reads into the same memory: another peer's frame (here a
  // header, "TSCL...") may land at its start before this socket's read lands behind the carry.
  const { buffers } = sinkMemory();
  const message = new Uint8Array(new Float32Array([1, 2, 1, 2, 1, 2, 1, 2]).buffer);
  const received = new Uint8Array(message.byteLength);
  const consume = (piece: Uint8Array, offset: number) => {
    received.set(piece, offset);
  };
  const sink = streamingSink({ elementBytes: 4, consume, cancelled: false }, buffers, () => undefined);
  const first = sink.place!(message.byteLength) ?? buffers.read;
  first.set(message.subarray(0, 7));
  sink.payload(first.subarray(0, 7));
  const next = sink.place!(message.byteLength - 7)!;
  buffers.read.set(encodeHeader({ flags: 0, channel: 0, commId: 1, seq: 1, opcode: 1, length: 64, checksum: 0 }));
  next.set(message.subarray(7));
  sink.payload(next.subarray(0, message.byteLength - 7));
  sink.end();
  assert.deepEqual(new Float32Array(received.buffer), new Float32Array(message.buffer));
});
