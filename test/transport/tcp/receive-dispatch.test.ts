import assert from 'node:assert/strict';
import { test } from 'node:test';
import { crc32 } from 'node:zlib';
import type { ControlChannel } from '../../../src/transport/tcp/control-channel.js';
import { type Frame, FrameParser, type FrameSink, encodeFrame } from '../../../src/transport/tcp/frame.js';
import { PeerLink } from '../../../src/transport/tcp/peer-link.js';
import { ReceiveDispatch } from '../../../src/transport/tcp/receive-dispatch.js';
import type { ReceiveBuffers } from '../../../src/transport/tcp/receive-sink.js';
import { Resend } from '../../../src/transport/tcp/resend.js';

const COMM = 7;

/** A dispatch and one peer's link, fed by a parser that decodes into the dispatch's spare headers. */
function receiving() {
  const resend = new Resend({ rank: 0, commId: COMM, retries: 3, crc32 });
  const dispatch = new ReceiveDispatch({} as ControlChannel, resend, {
    rank: 0,
    commId: COMM,
    buffers: {} as ReceiveBuffers,
  });
  const link = new PeerLink(1, { connections: [], sameMachine: true, resendWindowBytes: 1 << 20 });
  const parser = new FrameParser(1 << 20, { crc32, spares: dispatch });
  const feed = (seq: number, fill: number, bytes = 8) =>
    parser.push(
      encodeFrame(
        { flags: 0, channel: 0, commId: COMM, seq, opcode: 1, length: bytes, checksum: 0 },
        new Uint8Array(bytes).fill(fill),
      ),
      (h) => dispatch.open(link, h),
    );
  const take = (): Frame => {
    const frame = link.inbox.get(0)?.shift();
    assert.ok(frame !== undefined, 'a frame waits in the inbox');
    return frame;
  };
  return { dispatch, link, parser, feed, take };
}

const filledWith = (frame: Frame, fill: number, bytes = 8) =>
  frame.payload.byteLength === bytes && frame.payload.every((b) => b === fill);

test('tcp: an inbox frame read and recycled carries a later frame; one still held is never written over', () => {
  const { dispatch, feed, take } = receiving();
  feed(1, 0x11);
  feed(2, 0x22);
  const first = take();
  const { header, payload } = first;
  dispatch.recycle(first);
  feed(3, 0x33);
  const second = take();
  assert.equal(second.header.seq, 2);
  assert.ok(filledWith(second, 0x22), 'the frame queued behind the recycled one keeps its bytes');
  const third = take();
  assert.equal(third, first, 'the recycled frame object carries the next frame');
  assert.equal(third.header, header, 'its header object too');
  assert.equal(third.payload, payload, 'and its payload memory, the length being the same');
  assert.deepEqual(
    { ...third.header },
    { flags: 0, channel: 0, commId: COMM, seq: 3, opcode: 1, length: 8, checksum: 0 },
  );
  assert.ok(filledWith(third, 0x33));
  // Not recycled: the next frame gets memory of its own.
  feed(4, 0x44);
  const fourth = take();
  assert.notEqual(fourth.payload, second.payload);
  assert.ok(filledWith(second, 0x22), 'a frame taken but not recycled stays as it came');
  assert.ok(filledWith(fourth, 0x44));
});

test('tcp: a recycled frame takes a frame of another length into memory of that length', () => {
  const { dispatch, feed, take } = receiving();
  feed(1, 0x11, 8);
  dispatch.recycle(take());
  feed(2, 0x22, 24);
  const frame = take();
  assert.equal(frame.header.length, 24);
  assert.ok(filledWith(frame, 0x22, 24));
});

test('tcp: a frame that was restarted (its checksum failed, it came again) is never reused', () => {
  const { dispatch, link, parser, take } = receiving();
  const restarted: FrameSink[] = [];
  const bytes = new Uint8Array(8).fill(0x55);
  parser.push(
    encodeFrame({ flags: 0, channel: 0, commId: COMM, seq: 1, opcode: 1, length: 8, checksum: 0 }, bytes),
    (h) => {
      const sink = dispatch.open(link, h)!;
      // As the resend layer does with a corrupted frame before it comes again.
      sink.restart?.();
      restarted.push(sink);
      return sink;
    },
  );
  assert.equal(restarted.length, 1);
  const frame = take();
  assert.ok(filledWith(frame, 0x55));
  dispatch.recycle(frame);
  parser.push(
    encodeFrame({ flags: 0, channel: 0, commId: COMM, seq: 2, opcode: 1, length: 8, checksum: 0 }, bytes),
    (h) => dispatch.open(link, h),
  );
  assert.notEqual(take(), frame);
});

test('tcp: recycling a frame that is not an inbox frame is refused quietly', () => {
  const { dispatch, feed, take } = receiving();
  dispatch.recycle({
    header: { flags: 0, channel: 0, commId: COMM, seq: 9, opcode: 1, length: 0, checksum: 0 },
    payload: Buffer.alloc(0),
  });
  feed(1, 0x11);
  assert.ok(filledWith(take(), 0x11));
});
