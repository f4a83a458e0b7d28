import assert from 'node:assert/strict';
import { test } from 'node:test';
import { crc32 } from 'node:zlib';
import {
  FLAG_CHECKSUM,
  type Frame,
  FrameParser,
  bufferingSink,
  encodeHeader,
} from '../../../src/transport/tcp/frame.js';
import { sameShape } from '../../harness/v8-shapes.js';

// Its own file: V8 keeps one shape per kind of object for the whole process, and a test that ran
// first could have changed it already.
test('a frame parser keeps its shape when another parses a checksummed frame', () => {
  const bystander = new FrameParser(1 << 20, { crc32 });
  const parser = new FrameParser(1 << 20, { crc32 });
  // A checksum of 2^31 or more is not a small integer to V8.
  const payload = Buffer.from('frame 0');
  assert.ok(crc32(payload) >= 2 ** 31, 'the payload has a large checksum');
  const header = {
    flags: FLAG_CHECKSUM,
    channel: 1,
    commId: 9,
    seq: 2,
    opcode: 3,
    length: 7,
    checksum: crc32(payload),
  };
  const frames: Frame[] = [];
  parser.push(Buffer.concat([encodeHeader(header), payload]), (h) => bufferingSink(h, (f) => frames.push(f)));
  assert.deepEqual(
    frames.map((f) => f.payload),
    [payload],
  );
  assert.ok(sameShape(bystander, parser), 'a parser made before another parsed a frame');
});
