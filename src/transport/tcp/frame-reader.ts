import type { Socket } from 'node:net';
import { ErrorCode, TscclError, internalError } from '../../errors.js';
import { crc32 } from '../../kernels/crc32.js';
import { type BreakPoint, type FrameHeader, FrameParser } from './frame.js';
import type { FrameHolds, HeldReader } from './hold.js';
import type { Connection, PeerLink } from './peer-link.js';
import type { ReceiveDispatch } from './receive-dispatch.js';
import type { ReceiveBuffers } from './receive-sink.js';
import type { Resend } from './resend.js';
import { HEADER_FIRST_MIN_BYTES } from './tcp-tunables.js';

/** One socket's stream as its reader sees it. */
interface Stream {
  /** Taken down by this rank to go on over another socket: nothing more is read, and its end is no break. */
  retired: boolean;
  /** Where the stream stands. */
  breakPoint(): BreakPoint;
}

/** What a transport's frame reader works with. */
export interface FrameReaderParts {
  readonly rank: number;
  readonly dispatch: ReceiveDispatch;
  readonly resend: Resend;
  readonly holds: FrameHolds;
  readonly buffers: ReceiveBuffers;
  readonly maxPayloadBytes: number;
  /** Whether the transport is closing: sockets closing then are no loss. */
  readonly closing: () => boolean;
  /**
   * A socket of a link broke (closed without a goodbye): true if it is being re-established
   * (reconnect.ts), false if the link is lost. `at`: where this rank's reading of it broke.
   */
  readonly broke: (link: PeerLink, lane: number, at: BreakPoint) => boolean;
}

/**
 * Reads the peers' frames from the sockets of a transport. The rest of a frame that was read in
 * part is read on its own, not together with the frames behind it: a plain receive reads it
 * straight into its destination, and the frame's end is the end of a read, so the receive of the
 * next frame can be posted before that frame is read (Node runs the microtasks between two
 * reads). A large frame without a receiver is held in its socket (hold.ts).
 */
export class FrameReader {
  private readonly parts: FrameReaderParts;
  /**
   * Per socket this rank reads: where its stream stands, and whether this rank took it down
   * itself to go on over another (retire), so that its end is no break.
   */
  private readonly streams = new WeakMap<Socket, Stream>();

  constructor(parts: FrameReaderParts) {
    this.parts = parts;
  }

  /** Reads a peer's frames from one of its sockets (`resume`: one that replaces a broken socket, from where that one broke). */
  listen(link: PeerLink, connection: Connection, lane: number, resume?: BreakPoint): void {
    const { socket, intake } = connection;
    const { dispatch, resend, holds, buffers } = this.parts;
    const parser = new FrameParser(this.parts.maxPayloadBytes, {
      crc32,
      checks: resend.checks(link, lane),
      resume,
      spares: dispatch,
    });
    const stream: Stream = { retired: false, breakPoint: () => parser.breakPoint };
    // Made once, not per read: a closure per read is garbage on every small call.
    const openPatient = (header: FrameHeader) => dispatch.open(link, header, lane, true);
    const openNow = (header: FrameHeader) => dispatch.open(link, header, lane, false);
    const reader: HeldReader = {
      take: (bytes: Uint8Array, patient = true) => {
        // A socket that went down is parsed no further, not even to hand a held frame its receive
        // (which would then wait for a frame the parser will never read): a new socket goes on
        // from where its stream stood when it went down, and carries what it held again. One
        // test covers it all: retire destroys the socket it retires, and a socket is replaced
        // only once it has closed.
        if (socket.destroyed) return;
        link.laneReads[lane]++;
        let used: number;
        try {
          used = parser.push(bytes, patient ? openPatient : openNow);
          resend.flush(link);
        } catch (err) {
          this.fail(link, socket, err);
          return;
        }
        if (parser.stalled) holds.hold(link, connection, bytes.subarray(used), reader);
      },
      get stalled() {
        return parser.stalled;
      },
    };
    intake.placement = () => {
      const frame = parser.current;
      if (frame === undefined || frame.left === 0) {
        const headerLeft = parser.headerLeft;
        return headerLeft > 0 && parser.previousBytes >= HEADER_FIRST_MIN_BYTES
          ? buffers.read.subarray(0, headerLeft)
          : undefined;
      }
      return frame.sink.place?.(frame.left) ?? buffers.read.subarray(0, Math.min(frame.left, buffers.read.byteLength));
    };
    intake.attach(reader.take);
    this.streams.set(socket, stream);
    this.watch(link, connection, lane, stream);
  }

  /** Where the stream of socket `lane` from `link`'s peer stands now. */
  breakPoint(link: PeerLink, lane: number): BreakPoint | undefined {
    return this.streams.get(link.connections[lane].socket)?.breakPoint();
  }

  /**
   * Takes socket `lane` from `link`'s peer down on purpose, to go on over another from where its
   * stream stands (failback): nothing more is read from it, and its end is no break.
   */
  retire(link: PeerLink, lane: number): void {
    const socket = link.connections[lane].socket;
    const stream = this.streams.get(socket);
    if (stream !== undefined) stream.retired = true;
    socket.destroy();
  }

  private fail(link: PeerLink, socket: Socket, err: unknown): void {
    const { rank } = this.parts;
    const base = internalError(err, 'receiving a frame', { peer: link.peer });
    link.lose(
      new TscclError(base.code, `Rank ${rank}, data from rank ${link.peer}: ${base.message}`, {
        ...base.details,
        rank,
        peer: link.peer,
      }),
    );
    socket.destroy();
  }

  private watch(link: PeerLink, connection: Connection, lane: number, stream: Stream): void {
    const { socket } = connection;
    const { rank } = this.parts;
    socket.on('error', () => {});
    socket.resume(); // the handshake left it paused
    // Waiting calls hold timers; an idle link must not keep the process alive after the script ends.
    socket.unref();
    socket.on('close', () => {
      if (this.parts.closing() || stream.retired) return;
      // A socket already replaced by a reconnection is no news.
      if (link.connections[lane] !== connection) return;
      if (!link.saidGoodbye && link.error === undefined && this.parts.broke(link, lane, stream.breakPoint())) return;
      // A peer that destroyed its communicator ends each of its sockets after its last frame, and
      // the sockets' bytes do not keep step: while another one still reads, that socket may carry
      // parts of a message this rank waits for.
      if (link.saidGoodbye && link.connections.some((c) => !c.socket.destroyed)) return;
      // A goodbye comes from destroy() and from a process that ends, so both are named.
      const why = link.saidGoodbye
        ? `rank ${link.peer} destroyed the communicator or its script ended`
        : `Rank ${rank} lost its connection to rank ${link.peer}`;
      link.lose(
        new TscclError(
          ErrorCode.PEER_LOST,
          link.saidGoodbye ? `Rank ${rank} needs data from rank ${link.peer}, but ${why}` : why,
          { rank, peer: link.peer },
        ),
      );
    });
  }
}
