import type { Crc32 } from '../../kernels/crc32.js';
import { CONTROL_CHANNEL } from '../channels.js';
import { FLAG_CHECKSUM, FLAG_LINK, type FrameHeader, encodeHeader, frameError } from './frame.js';

/**
 * Link-layer frames (FLAG_LINK) keep a checksummed stream whole when bits flip on the way. They
 * travel on socket 0 on CONTROL_CHANNEL, are numbered like every frame of their socket, always
 * carry a CRC32 (whatever the link's setting), and are never acknowledged or sent again. The
 * opcode says what a frame means:
 */
export const LINK_OPCODES = {
  /** Every frame of socket <lane> up to <number> arrived intact (or came again intact). */
  ACK: 1,
  /** Frame <number> of socket <lane> failed its checksum: send its payload again. */
  RESEND: 2,
  /** Frame <number> of socket <lane> once more: the reference, then that frame's whole payload. */
  RESENT: 3,
  /** Frame <number> of socket <lane> is no longer held by its sender: it cannot come again. */
  GONE: 4,
  /** A link frame from the receiver failed its checksum: repeat your acknowledgements and requests. No payload. */
  GARBLED: 5,
} as const;

/**
 * The reference every link frame but GARBLED starts with (little-endian):
 *   0  u32 lane (the socket of the frame named)    8  u32 number, low 32 bits
 *   4  u32 zero                                    12 u32 number, high 32 bits
 */
export const LINK_REF_BYTES = 16;
const REF = { lane: 0, zero: 4, low: 8, high: 12 } as const;

/** A frame of a peer's socket, as a link frame names it. */
export interface FrameRef {
  readonly lane: number;
  readonly number: number;
}

/** A link frame's pieces (header, reference, payload), to be written in one corked burst. */
export function encodeLinkFrame(
  crc32: Crc32,
  commId: number,
  opcode: number,
  ref?: FrameRef,
  payload?: Uint8Array,
): Buffer[] {
  const head = ref === undefined ? Buffer.alloc(0) : Buffer.alloc(LINK_REF_BYTES);
  if (ref !== undefined) {
    head.writeUInt32LE(ref.lane, REF.lane);
    head.writeUInt32LE(ref.number % 2 ** 32, REF.low);
    head.writeUInt32LE(Math.floor(ref.number / 2 ** 32), REF.high);
  }
  const length = head.byteLength + (payload?.byteLength ?? 0);
  const checksum = payload === undefined ? crc32(head) : crc32(payload, crc32(head));
  const header: FrameHeader = {
    flags: FLAG_LINK | FLAG_CHECKSUM,
    channel: CONTROL_CHANNEL,
    commId,
    seq: 0,
    opcode,
    length,
    checksum,
  };
  const pieces = [encodeHeader(header), head];
  if (payload !== undefined && payload.byteLength > 0) pieces.push(payload as Buffer);
  return pieces;
}

/** The frame a link frame names; a malformed reference (short, a nonzero reserved word, a lane the link does not have) is a frame error. */
export function decodeFrameRef(payload: Buffer, lanes: number, peer: number): FrameRef {
  if (payload.byteLength < LINK_REF_BYTES)
    throw frameError(
      `a link frame from rank ${peer} of ${payload.byteLength} bytes, shorter than its ${LINK_REF_BYTES}-byte reference`,
    );
  const lane = payload.readUInt32LE(REF.lane);
  if (payload.readUInt32LE(REF.zero) !== 0 || lane >= lanes)
    throw frameError(
      `a link frame from rank ${peer} names socket ${lane} of ${lanes} (or its reserved word is not zero)`,
    );
  const number = payload.readUInt32LE(REF.high) * 2 ** 32 + payload.readUInt32LE(REF.low);
  if (number < 1) throw frameError(`a link frame from rank ${peer} names frame 0 (frames are numbered from 1)`);
  return { lane, number };
}
