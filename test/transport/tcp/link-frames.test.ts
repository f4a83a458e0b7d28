import assert from 'node:assert/strict';
import { noRecoveries } from '../../../src/transport/transport.js';
import type { Socket } from 'node:net';
import { test } from 'node:test';
import { ErrorCode, TscclError } from '../../../src/errors.js';
import { crc32 } from '../../../src/kernels/crc32.js';
import { CONTROL_CHANNEL } from '../../../src/transport/channels.js';
import { FLAG_CHECKSUM, FLAG_LINK, type Frame, FrameParser, bufferingSink } from '../../../src/transport/tcp/frame.js';
import {
  LINK_OPCODES,
  LINK_REF_BYTES,
  decodeFrameRef,
  encodeLinkFrame,
} from '../../../src/transport/tcp/link-frames.js';
import { type Connection, PeerLink } from '../../../src/transport/tcp/peer-link.js';
import { Resend } from '../../../src/transport/tcp/resend.js';
import { seededRandom } from '../../../src/seeded-random.js';

/** Kept frames' headers matter only when a reconnected socket carries them again. */
const NO_HEADER = new Uint8Array(0);

/** A socket that keeps what is written to it, parsed back into frames. */
function recordingSocket(): { socket: Socket; frames: () => Frame[] } {
  const written: Buffer[] = [];
  const socket = {
    destroyed: false,
    cork() {},
    uncork() {},
    write(chunk: Uint8Array) {
      written.push(Buffer.from(chunk));
      return true;
    },
  } as unknown as Socket;
  const frames = () => {
    const out: Frame[] = [];
    new FrameParser(1 << 20, { crc32 }).push(Buffer.concat(written), (h) => bufferingSink(h, (f) => out.push(f)));
    return out;
  };
  return { socket, frames };
}

function linkTo(peer: number) {
  const recorder = recordingSocket();
  const link = new PeerLink(peer, {
    connections: [{ socket: recorder.socket } as Connection],
    sameMachine: false,
    resendWindowBytes: 1 << 20,
  });
  return { link, frames: recorder.frames };
}

const resend = new Resend({ rank: 0, commId: 7, retries: 3, crc32 });

/** The frame `encodeLinkFrame` makes, as a receiver's parser hands it over. */
function linkFrame(opcode: number, ref?: { lane: number; number: number }, payload?: Uint8Array): Frame {
  const frames: Frame[] = [];
  new FrameParser(1 << 20, { crc32 }).push(Buffer.concat(encodeLinkFrame(crc32, 7, opcode, ref, payload)), (h) =>
    bufferingSink(h, (f) => frames.push(f)),
  );
  assert.equal(frames.length, 1);
  return frames[0];
}

const isFrameError = (err: unknown) => err instanceof TscclError && err.code === ErrorCode.MISMATCH;

test('a link frame is checksummed, on the control channel, and names a frame by socket and 64-bit number', () => {
  const frame = linkFrame(LINK_OPCODES.RESENT, { lane: 0, number: 2 ** 40 + 3 }, Buffer.from('data'));
  assert.equal(frame.header.flags, FLAG_LINK | FLAG_CHECKSUM);
  assert.equal(frame.header.channel, CONTROL_CHANNEL);
  assert.equal(frame.header.length, LINK_REF_BYTES + 4);
  assert.deepEqual(decodeFrameRef(frame.payload, 1, 1), { lane: 0, number: 2 ** 40 + 3 });
  assert.equal(frame.payload.subarray(LINK_REF_BYTES).toString(), 'data');
  assert.equal(linkFrame(LINK_OPCODES.GARBLED).header.length, 0);
});

test('malformed references are frame errors: short, reserved word set, a socket the link lacks, frame 0', () => {
  const ref = Buffer.concat(encodeLinkFrame(crc32, 7, LINK_OPCODES.ACK, { lane: 0, number: 5 })).subarray(32);
  assert.throws(() => decodeFrameRef(ref.subarray(0, 12), 1, 1), isFrameError);
  const reserved = Buffer.from(ref);
  reserved.writeUInt32LE(1, 4);
  assert.throws(() => decodeFrameRef(reserved, 1, 1), isFrameError);
  const lane = Buffer.from(ref);
  lane.writeUInt32LE(1, 0);
  assert.throws(() => decodeFrameRef(lane, 1, 1), /names socket 1 of 1/);
  const zero = Buffer.from(ref);
  zero.writeUInt32LE(0, 8);
  assert.throws(() => decodeFrameRef(zero, 1, 1), /frame 0/);
});

test('a request for a frame still kept is answered with it; one no longer kept with GONE; one never written is refused', () => {
  const { link, frames } = linkTo(1);
  link.retained.keep(0, {
    number: link.retained.next(0),
    header: NO_HEADER,
    payload: Buffer.from('kept'),
    checksum: undefined,
  });
  link.retained.next(0); // a frame that was not kept (no checksum)
  resend.receive(link, linkFrame(LINK_OPCODES.RESEND, { lane: 0, number: 1 }));
  resend.receive(link, linkFrame(LINK_OPCODES.RESEND, { lane: 0, number: 2 }));
  const answers = frames();
  assert.deepEqual(
    answers.map((f) => f.header.opcode),
    [LINK_OPCODES.RESENT, LINK_OPCODES.GONE],
  );
  assert.equal(answers[0].payload.subarray(LINK_REF_BYTES).toString(), 'kept');
  assert.equal(link.recovery.resent, 1);
  assert.throws(() => resend.receive(link, linkFrame(LINK_OPCODES.RESEND, { lane: 0, number: 99 })), /never written/);
});

test('an acknowledgement frees kept frames, copies and references alike; one of frames never written is refused', () => {
  const { link } = linkTo(1);
  const memory = new Uint8Array(8).fill(3);
  link.retained.keep(0, {
    number: link.retained.next(0),
    header: NO_HEADER,
    payload: Buffer.from('a'),
    checksum: undefined,
  });
  link.retained.keep(0, { number: link.retained.next(0), header: NO_HEADER, payload: memory, checksum: crc32(memory) });
  link.retained.keep(0, {
    number: link.retained.next(0),
    header: NO_HEADER,
    payload: Buffer.from('c'),
    checksum: undefined,
  });
  resend.receive(link, linkFrame(LINK_OPCODES.ACK, { lane: 0, number: 2 }));
  assert.equal(link.retained.find(0, 1), undefined);
  assert.ok(link.retained.find(0, 3) !== undefined);
  assert.deepEqual(link.retained.holding, { frames: 1, copiedBytes: 1, references: 0 });
  assert.throws(() => resend.receive(link, linkFrame(LINK_OPCODES.ACK, { lane: 0, number: 4 })), /only 3 were written/);
});

test("a frame kept as the caller's memory is sent again as it was, or answered GONE once the caller rewrote it", () => {
  const { link, frames } = linkTo(1);
  const memory = new Uint8Array(16).fill(9);
  link.retained.keep(0, { number: link.retained.next(0), header: NO_HEADER, payload: memory, checksum: crc32(memory) });
  resend.receive(link, linkFrame(LINK_OPCODES.RESEND, { lane: 0, number: 1 }));
  memory[5] = 0;
  resend.receive(link, linkFrame(LINK_OPCODES.RESEND, { lane: 0, number: 1 }));
  const answers = frames();
  assert.deepEqual(
    answers.map((f) => f.header.opcode),
    [LINK_OPCODES.RESENT, LINK_OPCODES.GONE],
  );
  assert.deepEqual([...answers[0].payload.subarray(LINK_REF_BYTES)], new Array(16).fill(9));
  assert.equal(link.recovery.resent, 1);
});

test('a frame sent again that nobody asked for is dropped; one sent again before it was sent at all is refused', () => {
  const { link } = linkTo(1);
  assert.throws(
    () => resend.receive(link, linkFrame(LINK_OPCODES.RESENT, { lane: 0, number: 1 }, Buffer.from('x'))),
    /before it was sent at all/,
  );
  link.arrivals[0].ended = 5;
  resend.receive(link, linkFrame(LINK_OPCODES.RESENT, { lane: 0, number: 3 }, Buffer.from('x')));
  resend.receive(link, linkFrame(LINK_OPCODES.GONE, { lane: 0, number: 3 }));
  assert.deepEqual(link.recovery, noRecoveries());
});

test('fuzzed link frames are refused as frame errors or ignored, never anything else', () => {
  const next = seededRandom(67);
  const random = { int: (lo: number, hi: number) => lo + Math.floor(next() * (hi - lo)) };
  const { link } = linkTo(1);
  link.arrivals[0].ended = 1000;
  for (let i = 0; i < 2000; i++)
    link.retained.keep(0, {
      number: link.retained.next(0),
      header: NO_HEADER,
      payload: Buffer.from([i & 0xff]),
      checksum: undefined,
    });
  for (let i = 0; i < 500; i++) {
    const opcode = random.int(0, 8);
    const payload = Buffer.alloc(random.int(0, 40));
    for (let b = 0; b < payload.byteLength; b++) payload[b] = random.int(0, 256);
    if (random.int(0, 2) === 0 && payload.byteLength >= LINK_REF_BYTES) {
      payload.writeUInt32LE(0, 0);
      payload.writeUInt32LE(0, 4);
      payload.writeUInt32LE(random.int(0, 3000), 8);
      payload.writeUInt32LE(0, 12);
    }
    const frame: Frame = {
      header: {
        flags: FLAG_LINK | FLAG_CHECKSUM,
        channel: CONTROL_CHANNEL,
        commId: 7,
        seq: 0,
        opcode,
        length: payload.byteLength,
        checksum: crc32(payload),
      },
      payload,
    };
    try {
      resend.receive(link, frame);
    } catch (err) {
      assert.ok(isFrameError(err), `opcode ${opcode}, ${payload.byteLength} bytes: ${String(err)}`);
    }
  }
});

test('a garbled acknowledgement or request is asked for again; a garbled resent frame is asked for again until the retries run out', () => {
  const { link, frames } = linkTo(1);
  const checks = resend.checks(link, 0)!;
  const linkHeader = (opcode: number) => ({ ...linkFrame(opcode).header, opcode });
  const sink = bufferingSink(linkHeader(0), () => {});
  assert.equal(checks.corrupt(1, linkHeader(LINK_OPCODES.ACK), sink), true);
  const data = { flags: FLAG_CHECKSUM, channel: 0, commId: 7, seq: 4, opcode: 0, length: 16, checksum: 0 };
  let ended = 0;
  const dataSink = { ...bufferingSink(data, () => ended++) };
  assert.equal(checks.corrupt(2, data, dataSink), true); // request 1 of 3
  assert.equal(checks.corrupt(3, linkHeader(LINK_OPCODES.RESENT), sink), true); // request 2 of 3
  assert.equal(checks.corrupt(4, linkHeader(LINK_OPCODES.RESENT), sink), true); // request 3 of 3
  assert.throws(
    () => checks.corrupt(5, linkHeader(LINK_OPCODES.RESENT), sink),
    (err: unknown) =>
      err instanceof TscclError &&
      err.code === ErrorCode.CHECKSUM &&
      /failed its checksum 3 time\(s\)/.test(err.message),
  );
  assert.deepEqual(
    frames().map((f) => f.header.opcode),
    [LINK_OPCODES.GARBLED, LINK_OPCODES.RESEND, LINK_OPCODES.RESEND, LINK_OPCODES.RESEND],
  );
  assert.equal(ended, 0, 'the corrupted frame never ended');
  assert.deepEqual(link.recovery, {
    corrupted: 1,
    requested: 3,
    recovered: 0,
    resent: 0,
    garbled: 4,
    reconnects: 0,
    failovers: 0,
    failbacks: 0,
  });
});

test('intact checksummed frames are acknowledged every 32 frames; unchecksummed ones need none', () => {
  const { link, frames } = linkTo(1);
  const checks = resend.checks(link, 0)!;
  const data = (flags: number) => ({ flags, channel: 0, commId: 7, seq: 1, opcode: 0, length: 8, checksum: 0 });
  for (let n = 1; n <= 31; n++) checks.intact(n, data(FLAG_CHECKSUM));
  resend.flush(link);
  assert.equal(frames().length, 0);
  checks.intact(32, data(FLAG_CHECKSUM));
  resend.flush(link);
  for (let n = 33; n <= 70; n++) checks.intact(n, data(0));
  resend.flush(link);
  assert.deepEqual(
    frames().map((f) => [f.header.opcode, decodeFrameRef(f.payload, 1, 1).number]),
    [[LINK_OPCODES.ACK, 32]],
  );
});
