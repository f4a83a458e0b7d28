import assert from 'node:assert/strict';
import { test } from 'node:test';
import { crc32 } from 'node:zlib';
import {
  FLAG_CHECKSUM,
  type Frame,
  FrameParser,
  HEADER_BYTES,
  blankHeader,
  bufferingSink,
  decodeHeader,
  encodeFrame,
  encodeFrameInto,
  encodeHeader,
} from '../../../src/transport/tcp/frame.js';
import { sameShape } from '../../harness/v8-shapes.js';

/** Feeds chunks and collects whole frames, as the transport does when no receiver waits. */
function parse(parser: FrameParser, ...chunks: Uint8Array[]): Frame[] {
  const frames: Frame[] = [];
  for (const c of chunks) parser.push(c, (h) => bufferingSink(h, (f) => frames.push(f)));
  return frames;
}

const header = (length: number, checksum = 0) => ({
  flags: checksum ? FLAG_CHECKSUM : 0,
  channel: 1,
  commId: 0xabcdef01,
  seq: 5,
  opcode: 2,
  length,
  checksum,
});

test('the header encodes to the documented 32 bytes', () => {
  assert.deepEqual(
    [...encodeHeader(header(0x1_0000_0002))],
    [
      0x54,
      0x53,
      0x43,
      0x4c,
      2,
      0,
      1,
      0, // "TSCL", version 2, flags 0, channel 1
      0x01,
      0xef,
      0xcd,
      0xab,
      1,
      0,
      0,
      0, // comm id, length high
      5,
      0,
      0,
      0,
      2,
      0,
      0,
      0, // seq, opcode
      2,
      0,
      0,
      0,
      0,
      0,
      0,
      0, // length low, checksum
    ],
  );
});

test('frames parse the same fed byte by byte or all at once', () => {
  const payloads = [Buffer.from('hello'), Buffer.alloc(0), Buffer.alloc(1000, 9)];
  const stream = Buffer.concat(payloads.flatMap((p) => [encodeHeader(header(p.byteLength, crc32(p))), p]));
  const whole = parse(new FrameParser(1 << 20, { crc32 }), stream);
  const pieces = parse(new FrameParser(1 << 20, { crc32 }), ...[...stream].map((b) => Uint8Array.of(b)));
  assert.deepEqual(
    whole.map((f) => f.payload),
    payloads,
  );
  assert.deepEqual(
    pieces.map((f) => f.payload),
    payloads,
  );
  assert.equal(whole[0].header.seq, 5);
});

test('bad magic, bad version, oversized frames and flipped bits are refused', () => {
  const good = Buffer.concat([encodeHeader(header(4, crc32(Buffer.from('abcd')))), Buffer.from('abcd')]);
  const bad = (mutate: (b: Buffer) => void) => {
    const b = Buffer.from(good);
    mutate(b);
    return b;
  };
  assert.throws(
    () =>
      parse(
        new FrameParser(100, { crc32 }),
        bad((b) => {
          b[0] = 0;
        }),
      ),
    /bad magic/,
  );
  assert.throws(
    () =>
      parse(
        new FrameParser(100, { crc32 }),
        bad((b) => {
          b[4] = 9;
        }),
      ),
    /frame version 9/,
  );
  assert.throws(() => parse(new FrameParser(3, { crc32 }), good), /exceeds the limit of 3/);
  assert.throws(
    () =>
      parse(
        new FrameParser(100, { crc32 }),
        bad((b) => {
          b[HEADER_BYTES + 1] ^= 4;
        }),
      ),
    /checksum mismatch on channel 1 seq 5/,
  );
  assert.deepEqual(parse(new FrameParser(100, { crc32 }), good.subarray(0, HEADER_BYTES + 2)), []);
});

test('a payload streams into its sink piece by piece, and the checksum is checked across pieces', () => {
  const payload = Buffer.alloc(1000).map((_, i) => i % 251);
  const stream = Buffer.concat([encodeHeader(header(payload.byteLength, crc32(payload))), payload]);
  const pieces: number[] = [];
  let ended = 0;
  const parser = new FrameParser(1 << 20, { crc32 });
  for (let at = 0; at < stream.byteLength; at += 97) {
    parser.push(stream.subarray(at, at + 97), () => ({
      payload: (p) => pieces.push(p.byteLength),
      end: () => {
        ended++;
      },
    }));
  }
  assert.equal(ended, 1);
  assert.equal(
    pieces.reduce((a, b) => a + b, 0),
    1000,
  );
  assert.ok(pieces.length > 5);
});

test('a frame encoded into reused memory is the fresh encoding at its start, its length returned, and one that does not fit is refused', () => {
  const payload = Uint8Array.from({ length: 40 }, (_, i) => i + 1);
  const into = new Uint8Array(HEADER_BYTES + 64).fill(0xee);
  const length = encodeFrameInto(header(payload.byteLength), payload, into);
  assert.equal(length, HEADER_BYTES + payload.byteLength);
  assert.deepEqual(into.subarray(0, length), new Uint8Array(encodeFrame(header(payload.byteLength), payload)));
  assert.ok(
    into.subarray(length).every((v) => v === 0xee),
    'nothing written past the frame',
  );
  assert.throws(() => encodeFrameInto(header(65), new Uint8Array(65), into), RangeError);
});

test('a sink that takes pieces in place gets ranges of the chunk read, and a checksummed frame as views for its checksum', () => {
  const plain = Uint8Array.from({ length: 24 }, (_, i) => 100 + i);
  const summed = Uint8Array.from({ length: 16 }, (_, i) => 200 + i);
  const stream = Buffer.concat([
    encodeHeader(header(plain.byteLength)),
    plain,
    encodeHeader(header(summed.byteLength, crc32(summed))),
    summed,
  ]);
  const calls: string[] = [];
  const frames: number[][] = [];
  const parser = new FrameParser(1 << 20, { crc32 });
  let chunk = stream.subarray(0, 0);
  for (let at = 0; at < stream.byteLength; at += 40) {
    chunk = stream.subarray(at, at + 40);
    parser.push(chunk, () => {
      const got: number[] = [];
      return {
        payload: (piece) => {
          calls.push(`view ${piece.byteLength}`);
          got.push(...piece);
        },
        payloadAt: (from, offset, length) => {
          assert.equal(from, chunk, 'the chunk pushed, not a copy');
          calls.push(`at ${offset} ${length}`);
          got.push(...from.subarray(offset, offset + length));
        },
        end: () => frames.push(got),
      };
    });
  }
  // Chunks of 40 bytes: the first frame's payload at 32-39 and 0-15 of the next chunk, the second's as views.
  assert.deepEqual(calls, ['at 32 8', 'at 0 16', 'view 16']);
  assert.deepEqual(frames, [[...plain], [...summed]]);
});

test('a header whose sink is not named yet stops the parser right after it, until a later push names one', () => {
  const payload = Buffer.from('abcdefgh');
  const stream = Buffer.concat([
    encodeHeader(header(payload.byteLength, crc32(payload))),
    payload,
    encodeHeader(header(0)),
  ]);
  const parser = new FrameParser(1 << 20, { crc32 });
  let asked = 0;
  assert.equal(
    parser.push(stream, () => {
      asked++;
      return undefined;
    }),
    HEADER_BYTES,
  );
  assert.ok(parser.stalled);
  const left = () => parser.current?.left;
  assert.equal(left(), undefined);
  const frames: Frame[] = [];
  const open = (h: Parameters<typeof bufferingSink>[0]) => bufferingSink(h, (f) => frames.push(f));
  assert.equal(parser.push(new Uint8Array(0), open), 0, 'an empty push names the sink of the waiting header');
  assert.equal(asked, 1);
  assert.equal(left(), payload.byteLength);
  assert.equal(parser.push(stream.subarray(HEADER_BYTES, HEADER_BYTES + 3), open), 3);
  assert.equal(left(), payload.byteLength - 3);
  assert.equal(parser.push(stream.subarray(HEADER_BYTES + 3), open), stream.byteLength - HEADER_BYTES - 3);
  assert.ok(!parser.stalled);
  assert.deepEqual(
    frames.map((f) => f.payload),
    [payload, Buffer.alloc(0)],
  );
});

test('a frame broken off twice, the second time before its header came again, still ends in the sink it began in', () => {
  const payload = Buffer.from('0123456789abcdef');
  const frame = encodeFrame(header(payload.byteLength, crc32(payload)), payload);
  const ended: Frame[] = [];
  const opened: number[] = [];
  const open = (h: Parameters<typeof bufferingSink>[0]) => {
    opened.push(h.seq);
    return bufferingSink(h, (f) => ended.push(f));
  };
  // Frame 7 breaks off after half its payload.
  const first = new FrameParser(1 << 20, { crc32, resume: { from: 7, open: undefined } });
  first.push(frame.subarray(0, HEADER_BYTES + 8), open);
  const broke = first.breakPoint;
  assert.equal(broke.from, 7);
  assert.ok(broke.open !== undefined);
  broke.open.sink.restart?.();
  // The socket that replaced it breaks before a byte of the frame came again (and after some of its header).
  for (const cut of [0, 5]) {
    const second = new FrameParser(1 << 20, { crc32, resume: broke });
    second.push(frame.subarray(0, cut), open);
    assert.equal(second.breakPoint.from, 7);
    assert.equal(second.breakPoint.open, broke.open, `a break after ${cut} header bytes keeps the begun sink`);
  }
  const third = new FrameParser(1 << 20, { crc32, resume: broke });
  third.push(frame, open);
  assert.deepEqual(opened, [5], 'the frame named one sink, on the first socket');
  assert.deepEqual(
    ended.map((f) => f.payload),
    [payload],
  );
  assert.equal(third.breakPoint.from, 8);
});

test('between frames the parser says how much of the next header is still to come (0 inside a frame) and how large the frame that ended last was', () => {
  const payload = Buffer.from('abcdefgh');
  const stream = Buffer.concat([encodeHeader(header(payload.byteLength, crc32(payload))), payload]);
  const parser = new FrameParser(1 << 20, { crc32 });
  const sink = { payload: () => {}, end: () => {} };
  const open = () => sink;
  assert.equal(parser.headerLeft, HEADER_BYTES);
  assert.equal(parser.previousBytes, 0);
  parser.push(stream.subarray(0, 10), open);
  assert.equal(parser.headerLeft, HEADER_BYTES - 10);
  parser.push(stream.subarray(10, HEADER_BYTES + 2), open);
  assert.equal(parser.headerLeft, 0, 'inside the payload');
  assert.equal(parser.previousBytes, 0);
  parser.push(stream.subarray(HEADER_BYTES + 2), open);
  assert.equal(parser.headerLeft, HEADER_BYTES, 'the frame ended: a whole header is next');
  assert.equal(parser.previousBytes, payload.byteLength);
});

test('every header field round-trips at its extremes, and a channel or flags too wide for the header are refused', () => {
  const extreme = {
    flags: 0xff,
    channel: 0xffff,
    commId: 0xffff_ffff,
    seq: -2,
    opcode: 0xffff_fffe,
    length: 2 ** 33 + 0x8000_0001,
    checksum: 0x8000_0001,
  };
  assert.deepEqual(decodeHeader(encodeHeader(extreme), 2 ** 34), { ...extreme });
  assert.throws(() => encodeHeader({ ...extreme, channel: 0x1_0000 }), RangeError);
  assert.throws(() => encodeHeader({ ...extreme, flags: 0x100 }), RangeError);
});

test('a header decoded into a reused object equals the fresh decoding and is that object', () => {
  const bytes = encodeHeader(header(0x1_0000_0002, 0x9abc));
  const into = { ...header(1) };
  const decoded = decodeHeader(bytes, 2 ** 40, into);
  assert.equal(decoded, into);
  assert.deepEqual({ ...decoded }, { ...decodeHeader(bytes, 2 ** 40) });
  assert.throws(() => decodeHeader(bytes, 100, into), /exceeds the limit of 100/);
});

test('a header keeps its shape when its 32-bit fields and length take values beyond small integers', () => {
  const before = blankHeader();
  const decoded = decodeHeader(encodeHeader(header(2 ** 33, 0xffff_fff0)), 2 ** 40);
  const filled = blankHeader();
  filled.commId = 0xffff_ffff;
  filled.checksum = 0x8000_0000;
  filled.opcode = 0xffff_ffff;
  filled.length = 2 ** 33;
  assert.ok(sameShape(before, filled), 'filling a blank header with large values');
  assert.ok(sameShape(before, decoded), 'a decoded header');
  assert.ok(sameShape(before, blankHeader()), 'a header made after');
});
