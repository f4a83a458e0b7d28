import { ErrorCode, type ErrorCodeValue, TscclError, errorCodeOfWireNumber, errorWireNumber } from '../../errors.js';
import { CONTROL_CHANNEL } from '../channels.js';
import { type Frame, encodeHeader } from './frame.js';
import { LinkState, type PeerLink } from './peer-link.js';
import { HEARTBEAT_MS } from './tcp-tunables.js';

/**
 * Frames on CONTROL_CHANNEL carry no data; their opcode says what they mean. Every opcode not in
 * this table is a failure announcement: the opcode is the error's wire number (errorWireNumber),
 * the frame's seq the collective it failed in, and its payload says whose failure it was:
 *
 *   0  u32  origin: the rank whose failure started it
 *   4  i32  ended: the last collective the sender had ended successfully
 */
export const CONTROL_OPCODES = {
  /** The sender destroyed its communicator: its sockets close after this on purpose. */
  GOODBYE: 0xffff,
  /** "I am waiting in collective <seq>": sent when a wait runs long, so timeouts name the right ranks. */
  ENTERED: 0xfffe,
  /** "Still here": sent every HEARTBEAT_MS, so a peer behind a dead network shows as lost. */
  HEARTBEAT: 0xfffd,
} as const;

const FAILURE_PAYLOAD_BYTES = 8;
const FAILURE = { origin: 0, ended: 4 } as const;

/** A heartbeat frame of a communicator: what a frame that mattered only when sent is carried again as after a reconnection. */
export function heartbeatFrame(commId: number): Buffer {
  return encodeHeader({
    flags: 0,
    channel: CONTROL_CHANNEL,
    commId,
    seq: 0,
    opcode: CONTROL_OPCODES.HEARTBEAT,
    length: 0,
    checksum: 0,
  });
}

/** The first peer found to have failed: whose failure, its code and the collective it was in. */
export interface PeerFailed {
  readonly rank: number;
  readonly code: ErrorCodeValue;
  readonly seq: number;
}

/** A communicator's control traffic over its links: heartbeats, goodbyes, progress and failures. */
export class ControlChannel {
  private readonly rank: number;
  private readonly commId: number;
  private readonly links: readonly PeerLink[];
  private heartbeatTimer: NodeJS.Timeout | undefined;
  private heartbeatTimeoutMs = Infinity;

  constructor(links: readonly PeerLink[], self: { rank: number; commId: number }) {
    this.links = links;
    this.rank = self.rank;
    this.commId = self.commId;
  }

  /** Sends a heartbeat to every peer a few times per `timeoutMs`; a peer silent longer counts as lost. */
  startHeartbeat(timeoutMs: number): void {
    this.heartbeatTimeoutMs = timeoutMs;
    if (!Number.isFinite(timeoutMs) || this.links.every((l) => l.connections.length === 0)) return;
    this.heartbeatTimer = setInterval(
      () => this.toAll(CONTROL_OPCODES.HEARTBEAT, 0),
      Math.min(HEARTBEAT_MS, timeoutMs / 3),
    );
    this.heartbeatTimer.unref();
  }

  stopHeartbeat(): void {
    clearInterval(this.heartbeatTimer);
  }

  /** Tells every peer this rank gave up on the communicator, so their waits end now. */
  announceFailure(code: ErrorCodeValue, seq: number, origin: number, ended: number): void {
    const payload = Buffer.alloc(FAILURE_PAYLOAD_BYTES);
    payload.writeUInt32LE(origin, FAILURE.origin);
    payload.writeInt32LE(ended, FAILURE.ended);
    this.toAll(errorWireNumber(code), seq, payload);
  }

  /** Tells every peer this rank is waiting in collective `seq`. */
  announceSeq(seq: number): void {
    this.toAll(CONTROL_OPCODES.ENTERED, seq);
  }

  /** The header of the goodbye frame that ends each socket this rank writes on. */
  goodbyeFrame(): Buffer {
    return encodeHeader({
      flags: 0,
      channel: CONTROL_CHANNEL,
      commId: this.commId,
      seq: 0,
      opcode: CONTROL_OPCODES.GOODBYE,
      length: 0,
      checksum: 0,
    });
  }

  private toAll(opcode: number, seq: number, payload = Buffer.alloc(0)): void {
    // Heartbeats only matter when sent, so does progress; a failure must reach the peer even across a reconnection.
    const stale = opcode === CONTROL_OPCODES.HEARTBEAT || opcode === CONTROL_OPCODES.ENTERED;
    const frame = Buffer.concat([
      encodeHeader({
        flags: 0,
        channel: CONTROL_CHANNEL,
        commId: this.commId,
        seq,
        opcode,
        length: payload.byteLength,
        checksum: 0,
      }),
      payload,
    ]);
    for (const link of this.links) {
      if (link.connections.length === 0 || link.error !== undefined) continue;
      // A heartbeat goes on every socket, so a reader can tell a socket whose path failed (reconnect.ts).
      const lanes = opcode === CONTROL_OPCODES.HEARTBEAT ? link.connections.length : 1;
      for (let lane = 0; lane < lanes; lane++) {
        // A socket being re-established carries what must arrive once it is back (it is kept).
        if (link.connections[lane].socket.destroyed && (stale || !link.reconnects)) continue;
        link.writeControl([frame], stale, lane);
      }
    }
  }

  /** A control frame arrived from the link's peer. */
  receive(link: PeerLink, { header, payload }: Frame): void {
    if (header.opcode === CONTROL_OPCODES.GOODBYE) {
      link.goodbye();
      // The peer keeps writing until every frame it kept for resend is acknowledged (TcpTransport.close).
      link.acksDue = true;
      return;
    }
    if (header.opcode === CONTROL_OPCODES.HEARTBEAT) return;
    if (header.opcode === CONTROL_OPCODES.ENTERED) {
      link.heardSeq(header.seq);
      return;
    }
    const origin = payload.byteLength >= FAILURE.origin + 4 ? payload.readUInt32LE(FAILURE.origin) : link.peer;
    const ended = payload.byteLength >= FAILURE.ended + 4 ? payload.readInt32LE(FAILURE.ended) : 0;
    link.failure ??= { code: errorCodeOfWireNumber(header.opcode), seq: header.seq, origin, ended };
    link.wake();
  }

  /** Peers whose connection broke (or fell silent) without a goodbye: dead, as far as this rank can tell. */
  lostPeers(): number[] {
    this.checkHeartbeats();
    return this.links.filter((l) => l.broken && l.error!.code === ErrorCode.PEER_LOST).map((l) => l.peer);
  }

  /**
   * The first of `peers` that announced a failure before ending collective `seq` (at any time for
   * seq undefined), whose connection broke, or that fell silent.
   */
  failedBefore(peers: readonly number[], seq: number | undefined): PeerFailed | undefined {
    this.checkHeartbeats();
    for (const peer of peers) {
      const link = this.links[peer];
      const failure = link.failure;
      if (failure !== undefined && (seq === undefined || ((failure.ended - seq) | 0) < 0))
        return { rank: failure.origin, code: failure.code, seq: failure.seq };
      // A broken connection fails the call at once, unless the peer said first how far it got.
      if (failure === undefined && link.broken && link.error!.code === ErrorCode.PEER_LOST)
        return { rank: link.peer, code: ErrorCode.PEER_LOST, seq: link.lastSeq };
    }
    return undefined;
  }

  /** A peer silent past the heartbeat timeout counts as lost from now on. */
  private checkHeartbeats(): void {
    const now = performance.now();
    for (const link of this.links) {
      link.refreshHeard(now);
      if (
        link.connections.length > 0 &&
        link.state === LinkState.Open &&
        now - link.lastHeard > this.heartbeatTimeoutMs
      ) {
        link.down(
          new TscclError(
            ErrorCode.PEER_LOST,
            `Rank ${this.rank} has heard nothing from rank ${link.peer} for ${Math.round(now - link.lastHeard)} ms (heartbeat timeout ${this.heartbeatTimeoutMs} ms): its host is unreachable or it hangs`,
            { rank: this.rank, peer: link.peer, lost: 'silent' },
          ),
        );
        link.wake();
      }
    }
  }
}
