import type { FrameSink } from './frame.js';
import type { WaitingRecv } from './peer-link.js';
import type { StagingPool } from './staging-pool.js';

/**
 * One transport's receive memory. `read`: every inbound socket reads into it (READ_BUFFER_BYTES),
 * unless a receiver has a place for the bytes. `align`: where a received piece at an address its
 * element type cannot be viewed at is copied.
 */
export interface ReceiveBuffers {
  readonly read: Uint8Array;
  readonly align: Uint8Array;
  /** Whole-frame buffers for checksummed frames a reduction takes (stagedSink). */
  readonly staging: StagingPool;
}

/**
 * Reads a frame whole into a staging buffer, the socket's reads landing there directly, and
 * hands it to the receiver in one piece once intact: for a reduction under resend, which must
 * not take bytes that may turn out corrupted (a copy can be overwritten, a sum cannot). The
 * reduction of one frame then overlaps the next frame's arrival instead of its own.
 */
export function stagedSink(
  receiver: Pick<WaitingRecv, 'consume' | 'cancelled'>,
  bytes: number,
  staging: StagingPool,
  finished: (err?: unknown) => void,
): FrameSink {
  const stage = staging.take(bytes);
  let filled = 0;
  return {
    place: (want) => (receiver.cancelled ? undefined : stage.subarray(filled, filled + want)),
    payload: (piece) => {
      if (piece.buffer !== stage.buffer || piece.byteOffset !== stage.byteOffset + filled) stage.set(piece, filled);
      filled += piece.byteLength;
    },
    end: () => {
      let error: unknown;
      try {
        if (bytes > 0 && !receiver.cancelled) receiver.consume(stage.subarray(0, bytes), 0);
      } catch (err) {
        error = err;
      }
      staging.give(stage);
      finished(error);
    },
    restart: () => {
      filled = 0;
    },
  };
}

/**
 * Feeds a waiting receiver as the bytes come. Pieces handed on are whole elements at aligned
 * addresses (a reduction views them as typed arrays). A plain receive offers its destination as
 * the place to read to, and takes the bytes of every read as they are, also a read that ends
 * inside an element. A reduction reads into the transport's read buffer: when a read ended
 * inside an element, the next read lands behind room for the element's first bytes at the
 * buffer's start, and they are put there when it came, so the element is whole and everything
 * after it stays aligned (reads end anywhere: loopback hands them out in 65483-byte segments).
 * A piece elsewhere (a buffered frame, a read that came before this sink) is copied to the align
 * buffer, block by block. A read into a destination may land after the receiver gave up (the
 * buffer of a read is chosen before the read waits), so memory of a receive that failed holds
 * whatever came. Measurements: docs/tcp-transport.md.
 */
export function streamingSink(
  receiver: Pick<WaitingRecv, 'elementBytes' | 'consume' | 'cancelled'>,
  buffers: Pick<ReceiveBuffers, 'read' | 'align'>,
  finished: () => void,
): FrameSink {
  const into = receiver.consume.into;
  const e = into === undefined ? receiver.elementBytes : 1;
  const { read, align } = buffers;
  const carry = new Uint8Array(e);
  let carried = 0;
  let offset = 0;
  const block = align.byteLength - (align.byteLength % e);
  const hand = (piece: Uint8Array) => {
    if (receiver.cancelled || piece.byteLength === 0) return;
    if (piece.byteOffset % e === 0) {
      receiver.consume(piece, offset);
      offset += piece.byteLength;
      return;
    }
    for (let at = 0; at < piece.byteLength; at += block) {
      const part = piece.subarray(at, Math.min(piece.byteLength, at + block));
      align.set(part);
      receiver.consume(align.subarray(0, part.byteLength), offset);
      offset += part.byteLength;
    }
  };
  return {
    place: (bytes) => {
      if (receiver.cancelled) return undefined;
      // A copy carries nothing (e is 1), so each read goes on into the destination.
      if (into !== undefined) return into.subarray(offset, offset + bytes);
      if (carried === 0) return undefined;
      return read.subarray(carried, carried + Math.min(bytes, read.byteLength - carried));
    },
    payload: (piece) => {
      let at = 0;
      let bytes = piece;
      if (carried > 0 && piece.buffer === read.buffer && piece.byteOffset === read.byteOffset + carried) {
        // Read right behind the carried bytes' place (see place): they lead the piece. They are
        // put there only now: Node asks a socket for its next read's memory right after its last
        // read, and the other sockets of the transport read into the same memory meanwhile.
        read.set(carry.subarray(0, carried));
        bytes = read.subarray(0, carried + piece.byteLength);
        carried = 0;
      } else if (carried > 0) {
        const take = Math.min(e - carried, piece.byteLength);
        carry.set(piece.subarray(0, take), carried);
        carried += take;
        at = take;
        if (carried < e) return;
        hand(carry.slice());
        carried = 0;
      }
      const whole = Math.floor((bytes.byteLength - at) / e) * e;
      hand(bytes.subarray(at, at + whole));
      const rest = bytes.subarray(at + whole);
      carry.set(rest, 0);
      carried = rest.byteLength;
    },
    end: finished,
    // A copy is taken again over what came (a reduction's bytes cannot be taken back).
    restart:
      into === undefined
        ? undefined
        : () => {
            offset = 0;
            carried = 0;
          },
  };
}
