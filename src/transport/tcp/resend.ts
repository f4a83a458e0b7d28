import { ErrorCode, TscclError } from '../../errors.js';
import type { Crc32 } from '../../kernels/crc32.js';
import { log } from '../../log.js';
import { FLAG_CHECKSUM, FLAG_LINK, type Frame, type FrameChecks, frameError } from './frame.js';
import { type FrameRef, LINK_OPCODES, LINK_REF_BYTES, decodeFrameRef, encodeLinkFrame } from './link-frames.js';
import type { LaneArrivals, PendingFrame } from './lane-arrivals.js';
import type { PeerLink } from './peer-link.js';
import { ACK_EVERY_FRAMES } from './tcp-tunables.js';

/**
 * Resend on corruption over TCP. A receiver whose checksummed frame failed its CRC keeps the
 * frame's sink unended (its memory is rewritten when the frame comes again) and asks the sender
 * for it by socket and number; the sender answers from its RetainedFrames. Receivers acknowledge
 * checksummed frames every ACK_EVERY_FRAMES frames (and when the sender says goodbye), so it can
 * forget them. A frame is asked for at most `retries` times; then, or when
 * the sender no longer holds it, the link fails with TSCCL_ERR_CHECKSUM as without resend. A
 * header that fails cannot be told from a stream that lost its place, and still breaks the link.
 */
export class Resend {
  private readonly rank: number;
  private readonly commId: number;
  /** Requests per frame before the link fails; 0: resend is off. */
  readonly retries: number;
  private readonly crc32: Crc32;

  constructor(self: { rank: number; commId: number; retries: number; crc32: Crc32 }) {
    this.rank = self.rank;
    this.commId = self.commId;
    this.retries = self.retries;
    this.crc32 = self.crc32;
  }

  /** What the reader of socket `lane` from `link`'s peer does with checksum outcomes; undefined when resend is off. */
  checks(link: PeerLink, lane: number): FrameChecks | undefined {
    if (this.retries === 0) return undefined;
    const arrivals = link.arrivals[lane];
    return {
      corrupt: (number, header, sink) => {
        arrivals.ended = number;
        if (header.flags & FLAG_LINK) {
          this.garbled(link, header.opcode);
          return true;
        }
        if (sink.restart === undefined) return false;
        sink.restart();
        link.recovery.corrupted++;
        arrivals.pending.set(number, { sink, header, attempts: 0 });
        this.request(link, { lane, number });
        return true;
      },
      intact: (number, header) => {
        arrivals.ended = number;
        if ((header.flags & (FLAG_CHECKSUM | FLAG_LINK)) !== FLAG_CHECKSUM) return;
        if (++arrivals.unacked >= ACK_EVERY_FRAMES) link.acksDue = true;
      },
    };
  }

  /** Writes the acknowledgements that are due on the link (called after each read of its sockets). */
  flush(link: PeerLink): void {
    if (!link.acksDue) return;
    link.acksDue = false;
    // A loop, not a closure: one would give this function a context on every call, acks due or
    // not, and it runs after every read.
    for (let lane = 0; lane < link.arrivals.length; lane++) this.acknowledge(link, lane, link.arrivals[lane], false);
  }

  /** An intact link frame from the link's peer. A malformed or impossible one is a frame error (the link fails). */
  receive(link: PeerLink, { header, payload }: Frame): void {
    const op = header.opcode;
    if (op === LINK_OPCODES.GARBLED) {
      this.repeat(link);
      return;
    }
    if (op < LINK_OPCODES.ACK || op > LINK_OPCODES.GONE)
      throw frameError(`rank ${link.peer} sent a link frame with opcode ${op}`);
    // An acknowledgement or a request names a socket this rank writes; a frame sent again, one it reads.
    const toPeer = op === LINK_OPCODES.ACK || op === LINK_OPCODES.RESEND;
    const ref = decodeFrameRef(payload, toPeer ? link.connections.length : link.arrivals.length, link.peer);
    if (op === LINK_OPCODES.ACK) {
      link.retained.acknowledge(ref.lane, ref.number);
      link.wake();
    } else if (op === LINK_OPCODES.RESEND) this.answer(link, ref);
    else if (op === LINK_OPCODES.RESENT) this.arrivedAgain(link, ref, payload.subarray(LINK_REF_BYTES));
    else this.gone(link, ref);
  }

  /** The peer asks for a frame again: send it, or say it is gone. */
  private answer(link: PeerLink, ref: FrameRef): void {
    if (ref.number > link.retained.written[ref.lane])
      throw frameError(
        `rank ${link.peer} asked again for frame ${ref.number} of socket ${ref.lane}, which was never written`,
      );
    const frame = link.retained.find(ref.lane, ref.number);
    // Caller memory is sent again only as a snapshot that still matches what was sent.
    const payload = frame?.checksum === undefined ? frame?.payload : Buffer.from(frame.payload);
    if (
      payload === undefined ||
      (frame!.checksum !== undefined && this.crc32(payload) >>> 0 !== frame!.checksum >>> 0)
    ) {
      log(
        'INFO',
        () =>
          `Rank ${this.rank}: rank ${link.peer} asked again for frame ${ref.number} of socket ${ref.lane}, which ${frame === undefined ? 'is no longer kept' : 'the caller rewrote since it was sent'}`,
      );
      this.write(link, LINK_OPCODES.GONE, ref);
      return;
    }
    link.recovery.resent++;
    log(
      'INFO',
      () =>
        `Rank ${this.rank}: sending frame ${ref.number} of socket ${ref.lane} (${payload.byteLength} bytes) to rank ${link.peer} again, as it asked`,
    );
    this.write(link, LINK_OPCODES.RESENT, ref, payload);
  }

  private arrivedAgain(link: PeerLink, ref: FrameRef, payload: Buffer): void {
    const arrivals = link.arrivals[ref.lane];
    if (ref.number > arrivals.ended)
      throw frameError(
        `rank ${link.peer} sent frame ${ref.number} of socket ${ref.lane} again before it was sent at all`,
      );
    const pending = arrivals.pending.get(ref.number);
    // Asked for twice (a request was repeated), it comes twice: the second is late.
    if (pending === undefined) return;
    if (payload.byteLength !== pending.header.length)
      throw frameError(
        `rank ${link.peer} sent frame ${ref.number} again with ${payload.byteLength} bytes instead of ${pending.header.length}`,
      );
    arrivals.pending.delete(ref.number);
    link.recovery.recovered++;
    link.acksDue = true;
    log(
      'INFO',
      () =>
        `Rank ${this.rank}: frame ${ref.number} of socket ${ref.lane} from rank ${link.peer} (channel ${pending.header.channel}, seq ${pending.header.seq}) came again intact after ${pending.attempts} request(s)`,
    );
    pending.sink.payload(payload);
    pending.sink.end();
  }

  private gone(link: PeerLink, ref: FrameRef): void {
    const pending = link.arrivals[ref.lane].pending.get(ref.number);
    if (pending === undefined) return;
    throw this.unrecoverable(
      link,
      ref,
      pending,
      `rank ${link.peer} no longer holds it (it keeps the last TSCCL_RESEND_WINDOW_BYTES of small frames, and a large one only while the memory it was sent from is unchanged)`,
    );
  }

  /** A link frame from the peer failed its checksum: recover what it may have said. */
  private garbled(link: PeerLink, opcode: number): void {
    link.recovery.garbled++;
    log('INFO', () => `Rank ${this.rank}: a link frame (opcode ${opcode}) from rank ${link.peer} failed its checksum`);
    if (opcode === LINK_OPCODES.RESENT || opcode === LINK_OPCODES.GONE) this.requestAll(link);
    else if (opcode === LINK_OPCODES.GARBLED) this.repeat(link);
    else this.write(link, LINK_OPCODES.GARBLED);
  }

  /** The peer missed a link frame of this rank's (or a socket broke): acknowledge again and ask again for every pending frame. */
  repeat(link: PeerLink): void {
    link.arrivals.forEach((arrivals, lane) => {
      this.acknowledge(link, lane, arrivals, true);
    });
    this.requestAll(link);
  }

  private requestAll(link: PeerLink): void {
    link.arrivals.forEach((arrivals, lane) => {
      for (const number of arrivals.pending.keys()) this.request(link, { lane, number });
    });
  }

  private request(link: PeerLink, ref: FrameRef): void {
    const pending = link.arrivals[ref.lane].pending.get(ref.number)!;
    if (++pending.attempts > this.retries)
      throw this.unrecoverable(
        link,
        ref,
        pending,
        `it failed its checksum ${this.retries} time(s) (TSCCL_RESEND_RETRIES)`,
      );
    link.recovery.requested++;
    log(
      'INFO',
      () =>
        `Rank ${this.rank}: frame ${ref.number} of socket ${ref.lane} from rank ${link.peer} (channel ${pending.header.channel}, seq ${pending.header.seq}, ${pending.header.length} bytes) failed its checksum; asking again (${pending.attempts} of ${this.retries})`,
    );
    this.write(link, LINK_OPCODES.RESEND, ref);
  }

  private acknowledge(link: PeerLink, lane: number, arrivals: LaneArrivals, again: boolean): void {
    const complete = arrivals.complete;
    if (complete < 1 || (complete <= arrivals.acked && !again)) return;
    arrivals.acked = complete;
    arrivals.unacked = 0;
    this.write(link, LINK_OPCODES.ACK, { lane, number: complete });
  }

  private unrecoverable(link: PeerLink, ref: FrameRef, pending: PendingFrame, why: string): TscclError {
    const h = pending.header;
    return new TscclError(
      ErrorCode.CHECKSUM,
      `TCP frame checksum mismatch on channel ${h.channel} seq ${h.seq} (${h.length} bytes), frame ${ref.number} of socket ${ref.lane} from rank ${link.peer}: the data was corrupted on the way, and cannot come again: ${why}`,
      { op: 'transport', seq: h.seq },
    );
  }

  private write(link: PeerLink, opcode: number, ref?: FrameRef, payload?: Uint8Array): void {
    const socket = link.connections[0].socket;
    if (socket === undefined || socket.destroyed || socket.writableEnded || link.error !== undefined) return;
    // What a link frame says is said again after a reconnection (repeat), so it is stale once sent.
    link.writeControl(encodeLinkFrame(this.crc32, this.commId, opcode, ref, payload), true);
  }
}
