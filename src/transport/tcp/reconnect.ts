import { ErrorCode, TscclError } from '../../errors.js';
import { crc32 } from '../../kernels/crc32.js';
import { log } from '../../log.js';
import type { BreakPoint } from './frame.js';
import type { FrameReader } from './frame-reader.js';
import { type HandshakeOptions, confirmResume, peerCannotResume } from './handshake.js';
import { type PathAddress, type ResumeHandler, connectPeer, dialPeer, dials, greetPeer, pathFrom } from './mesh.js';
import type { Connection, PeerLink } from './peer-link.js';
import type { Resend } from './resend.js';
import { FAILBACK_PROBE_MS } from './tcp-tunables.js';

/** What re-establishing sockets needs of a transport. */
export interface ReconnectParts {
  readonly handshake: HandshakeOptions;
  /** How long a broken socket may take to be re-established before its peer counts as lost; 0: never tried. */
  readonly graceMs: number;
  readonly readBuffer: Uint8Array;
  /** Where each peer listens, one address per path. */
  readonly addresses: ReadonlyMap<number, readonly PathAddress[]>;
  /** This rank's address on each path. */
  readonly paths: readonly string[];
  readonly links: readonly PeerLink[];
  readonly reader: FrameReader;
  readonly resend: Resend;
  readonly closing: () => boolean;
}

/**
 * Why a link that broke could not be re-established, in its TSCCL_ERR_PEER_LOST's `details.lost`:
 * the peer's process is gone (its address refuses a dial), the socket was not back in time, the
 * stream cannot go on from where it broke (a frame not kept), or the peer refused the new socket;
 * or (control-channel.ts) the peer fell silent past the heartbeat timeout.
 */
export type LostBecause = 'process-gone' | 'not-reestablished' | 'cannot-resume' | 'refused' | 'silent';

/** Why a lane cannot go on: a frame from there on is not kept. */
const notKept = (frame: number) =>
  `frame ${frame} is not kept (a frame without a checksum never is; or the resend window forgot it)`;

/** The first redial comes at once; later ones back off to this. */
const MAX_REDIAL_DELAY_MS = 1000;
/** A single dial (connect and handshake) gives up after this, or at the grace deadline if sooner. */
const DIAL_MS = 2000;

/**
 * Re-establishes a socket that broke while both ranks live (a reset, a connection cut), through
 * the same authenticated handshake, and goes on where each direction's stream stopped. Both
 * ranks read and write every socket; the rank that dialed it (the higher of the pair) dials
 * again, naming the first frame it needs: the frame its reading broke in, whose sink is
 * restarted, or the next one. The accepting rank answers with the first frame it needs, and
 * each carries every frame from the other's point on again on the new socket, from what it
 * keeps for resend (RetainedFrames); a write that failed with the old socket completes when made
 * again. Where a frame from there on is not kept (it carried no checksum, or the window forgot
 * it), or the memory it was sent from has changed, the lane cannot go on and the peer is lost,
 * as without reconnection. A dial refused outright means the peer's process is gone: lost at
 * once. A socket not back within the grace period loses its peer too.
 */
export class Reconnector {
  private readonly parts: ReconnectParts;
  /**
   * Per link, the sockets being re-established ('dial' lanes this rank dials again, 'wait' lanes it
   * waits for the peer to dial) and the grace timer.
   */
  private readonly broken = new Map<PeerLink, { lanes: Set<string>; timer: NodeJS.Timeout }>();
  /** Where this rank's reading of each broken socket it waits for stopped, by `peer:lane`. */
  private readonly stoppedAt = new Map<string, BreakPoint>();
  /** Sockets taken down because their path fell silent: dialed again over another path first. */
  private readonly failedPaths = new Set<string>();
  /**
   * Sockets this rank dialed that run over another path than their own since a failover, by
   * `peer:lane`: each tries its own path again every FAILBACK_PROBE_MS (failBack).
   */
  private readonly away = new Map<string, { link: PeerLink; lane: number; probing: boolean; nextProbe: number }>();

  constructor(parts: ReconnectParts) {
    this.parts = parts;
  }

  /** Socket `lane` of `link` closed without a goodbye, this rank's reading of it stopped at `at`. True if it is being re-established. */
  broke(link: PeerLink, lane: number, at: BreakPoint): boolean {
    if (!link.reconnects || this.parts.closing()) return false;
    if (!this.restartAt(link, at)) return true;
    const rank = this.parts.handshake.rank;
    if (dials(rank, link.peer)) {
      this.waitFor(link, `dial${lane}`);
      log(
        'INFO',
        () =>
          `Rank ${rank}: socket ${lane} to rank ${link.peer} broke at frame ${at.from}; dialing it again (TSCCL_RECONNECT_MS ${this.parts.graceMs})`,
      );
      void this.redial(link, lane, at);
    } else {
      this.waitFor(link, `wait${lane}`);
      this.stoppedAt.set(`${link.peer}:${lane}`, at);
      log(
        'INFO',
        () =>
          `Rank ${rank}: socket ${lane} to rank ${link.peer} broke at frame ${at.from}; waiting for rank ${link.peer} to dial it again`,
      );
    }
    return true;
  }

  /** Restarts the frame whose reading stopped at `at`; false (and the link lost) if its receive cannot take it again. */
  private restartAt(link: PeerLink, at: BreakPoint): boolean {
    const open = at.open;
    if (open !== undefined && open.sink.restart === undefined) {
      this.lose(
        link,
        `Rank ${this.parts.handshake.rank} lost its connection to rank ${link.peer} in the middle of frame ${at.from}, which its receive cannot take again (a reduction reads frames without a checksum in place; TSCCL_CHECKSUM=1 stages them)`,
        'cannot-resume',
      );
      return false;
    }
    open?.sink.restart?.();
    return true;
  }

  /** Whether this rank can write socket `lane`'s frames from `from` on again; else why not. */
  private cannotResend(link: PeerLink, lane: number, from: number): string | undefined {
    const frames = link.retained.from(lane, from);
    if ('missing' in frames) return notKept(frames.missing);
    if (frames.some((f) => f.checksum !== undefined && crc32(f.payload) >>> 0 !== f.checksum >>> 0))
      return `a frame of socket ${lane} from ${from} on was sent from memory the caller has rewritten since`;
    return undefined;
  }

  /** The handler of peers' hellos that replace a broken socket (this rank accepted the one they replace). */
  readonly resume: ResumeHandler = (peer, lane, resumeFrom) => {
    const link = this.parts.links[peer];
    const rank = this.parts.handshake.rank;
    // While closing, too: what this rank sent on the broken socket is still owed to the peer.
    if (!link.reconnects)
      return { drop: 'this rank does not re-establish sockets (TSCCL_RECONNECT_MS=0, or TSCCL_RESEND_RETRIES=0)' };
    if (link.error !== undefined) return { drop: `the link is lost already: ${link.error.message}` };
    if (lane >= link.connections.length) return { drop: `it has only ${link.connections.length} sockets` };
    const written = link.retained.written[lane];
    if (resumeFrom > written + 1) return { drop: `it asks for frame ${resumeFrom}, and only ${written} were written` };
    const why = this.cannotResend(link, lane, resumeFrom);
    if (why !== undefined) return { refuse: this.cannotGoOn(link, lane, resumeFrom, why) };
    const key = `${peer}:${lane}`;
    let at = this.stoppedAt.get(key);
    if (at === undefined) {
      // The peer saw the break first, or moved the socket to another path: this rank stops
      // reading the old socket where its stream stands, and goes on from there.
      const live = this.parts.reader.breakPoint(link, lane);
      this.parts.reader.retire(link, lane);
      const stopped = `socket ${lane} from rank ${peer} cannot go on where this rank's reading of it stopped`;
      if (live === undefined)
        this.lose(link, `Rank ${rank} lost its connection to rank ${peer}: ${stopped}`, 'cannot-resume');
      if (live === undefined || !this.restartAt(link, live)) return { refuse: stopped };
      at = live;
      this.waitFor(link, `wait${lane}`);
    }
    this.stoppedAt.delete(key);
    const from = at;
    return {
      readFrom: from.from,
      accept: (connection) => this.carryOn(link, lane, connection, resumeFrom, from, `wait${lane}`),
      cannot: () => this.lose(link, peerCannotResume(rank, peer, lane, from.from), 'cannot-resume'),
    };
  };

  /**
   * Socket `lane` to the peer goes on over `connection`: this rank reads it from `at` and writes
   * every frame from `writeFrom` on again. The old socket's failed writes report in before its
   * 'close': only then is every one of them waiting to be made again, and the new socket takes over.
   */
  private carryOn(
    link: PeerLink,
    lane: number,
    connection: Connection,
    writeFrom: number,
    at: BreakPoint,
    key: string,
  ): void {
    const old = link.connections[lane].socket;
    const proceed = () => {
      if (link.error !== undefined) {
        connection.socket.destroy();
        return;
      }
      const frames = link.retained.from(lane, writeFrom);
      if ('missing' in frames) {
        connection.socket.destroy();
        this.cannotGoOn(link, lane, writeFrom, notKept(frames.missing));
        return;
      }
      link.connections[lane] = connection;
      link.laneHeard[lane] = performance.now();
      this.parts.reader.listen(link, connection, lane, at);
      link.retained.restartAt(lane, writeFrom);
      const unwritten = link.unwritten[lane];
      for (const frame of frames) {
        const written = unwritten.get(frame.number);
        unwritten.delete(frame.number);
        link.writeFrame(lane, frame.payload.byteLength > 0 ? [frame.header, frame.payload] : [frame.header], written);
      }
      // Writes that failed with the old socket although the peer had read them whole.
      for (const written of unwritten.values()) written();
      unwritten.clear();
      log(
        'INFO',
        () =>
          `Rank ${this.parts.handshake.rank}: socket ${lane} to rank ${link.peer} is back; reading from frame ${at.from}, and sent its ${frames.length} frame(s) from frame ${writeFrom} on again`,
      );
      this.restored(link, key);
    };
    if (old.closed) proceed();
    else {
      old.once('close', proceed);
      old.destroy();
    }
  }

  /** Loses the link because socket `lane` cannot go on from frame `from`; returns why, for the peer's refusal. */
  private cannotGoOn(link: PeerLink, lane: number, from: number, why: string): string {
    this.lose(
      link,
      `Rank ${this.parts.handshake.rank} lost socket ${lane} to rank ${link.peer}, and it cannot go on from frame ${from}: ${why}`,
      'cannot-resume',
    );
    return why;
  }

  /**
   * Resolves once no peer still has to dial again a socket it broke with this rank (what was sent
   * on it is owed to that peer), or after `ms`: a closing transport waits for this before its goodbye.
   */
  async settled(ms: number): Promise<void> {
    const owed = () => [...this.broken.values()].some((b) => [...b.lanes].some((key) => key.startsWith('wait')));
    const deadline = performance.now() + ms;
    while (owed() && performance.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 5));
  }

  /** Socket `lane` to `link`'s peer lost its path (path-watch.ts): it is dialed again over another path first. */
  pathFailed(link: PeerLink, lane: number): void {
    this.failedPaths.add(`${link.peer}:${lane}`);
  }

  /** Whether socket `lane` to `link`'s peer is being dialed again. */
  redialing(link: PeerLink, lane: number): boolean {
    return this.broken.get(link)?.lanes.has(`dial${lane}`) ?? false;
  }

  /**
   * Failback: each socket this rank dialed that runs over another path than its own since a
   * failover is dialed over its own path again, every FAILBACK_PROBE_MS until that path answers.
   * Once it does, the socket over the other path is taken down where its stream stands and the
   * new one goes on from there, as after a break (each rank carries its frames from there again).
   */
  failBack(now: number): void {
    for (const [key, away] of this.away) {
      const { link, lane } = away;
      if (link.error !== undefined || link.saidGoodbye) {
        this.away.delete(key);
        continue;
      }
      if (away.probing || now < away.nextProbe || this.redialing(link, lane)) continue;
      away.probing = true;
      void this.tryHome(away).finally(() => {
        away.probing = false;
        away.nextProbe = performance.now() + FAILBACK_PROBE_MS;
      });
    }
  }

  /** One failback attempt for socket `lane` from `link`'s peer. */
  private async tryHome({ link, lane }: { link: PeerLink; lane: number }): Promise<void> {
    const { handshake, paths, reader } = this.parts;
    const home = lane % paths.length;
    let connection: Connection;
    try {
      connection = await connectPeer(
        this.parts.addresses.get(link.peer)![home],
        { peer: link.peer, signal: AbortSignal.timeout(DIAL_MS), from: pathFrom(paths, home) },
        { rank: handshake.rank, readBuffer: this.parts.readBuffer },
      );
    } catch {
      return; // its path does not answer yet
    }
    const at = link.error === undefined && !this.parts.closing() ? reader.breakPoint(link, lane) : undefined;
    // Not while the socket is being dialed again anyway, nor inside a frame whose receive cannot start over.
    if (
      at === undefined ||
      this.redialing(link, lane) ||
      (at.open !== undefined && at.open.sink.restart === undefined)
    ) {
      connection.socket.destroy();
      return;
    }
    at.open?.sink.restart?.();
    reader.retire(link, lane);
    this.waitFor(link, `dial${lane}`);
    log(
      'INFO',
      () =>
        `Rank ${handshake.rank}: path ${home} (${paths[home]}) answers again; moving socket ${lane} from rank ${link.peer} back to it from frame ${at.from}`,
    );
    await this.redial(link, lane, at, connection);
  }

  /** Stops every grace timer (the transport has closed). */
  stop(): void {
    for (const { timer } of this.broken.values()) clearTimeout(timer);
    this.broken.clear();
    this.stoppedAt.clear();
    this.away.clear();
  }

  private waitFor(link: PeerLink, key: string): void {
    let broken = this.broken.get(link);
    if (broken === undefined) {
      const timer = setTimeout(() => {
        this.lose(
          link,
          `Rank ${this.parts.handshake.rank} lost its connection to rank ${link.peer}, and it was not re-established within ${this.parts.graceMs} ms (TSCCL_RECONNECT_MS)`,
          'not-reestablished',
        );
      }, this.parts.graceMs);
      timer.unref();
      broken = { lanes: new Set(), timer };
      this.broken.set(link, broken);
    }
    broken.lanes.add(key);
  }

  /** Socket `key` of `link` is no longer being re-established. */
  private forget(link: PeerLink, key: string): void {
    const broken = this.broken.get(link);
    broken?.lanes.delete(key);
    if (broken?.lanes.size === 0) this.stopWaiting(link);
  }

  /** No socket of `link` is waited for any more: its grace timer stops. */
  private stopWaiting(link: PeerLink): void {
    clearTimeout(this.broken.get(link)?.timer);
    this.broken.delete(link);
    for (let lane = 0; lane < link.connections.length; lane++) this.stoppedAt.delete(`${link.peer}:${lane}`);
  }

  private restored(link: PeerLink, key: string): void {
    this.forget(link, key);
    link.recovery.reconnects++;
    link.lastHeard = performance.now();
    // What link frames said on the broken socket may be lost: acknowledge and ask again.
    this.parts.resend.repeat(link);
    link.wake();
  }

  /** `home`: a socket already connected over the lane's own path (failback), greeted first. */
  private async redial(link: PeerLink, lane: number, at: BreakPoint, home?: Connection): Promise<void> {
    const { handshake, graceMs, paths } = this.parts;
    const addresses = this.parts.addresses.get(link.peer)!;
    const deadline = performance.now() + graceMs;
    const key = `${link.peer}:${lane}`;
    const start = this.failedPaths.delete(key) ? 1 : 0;
    for (let attempt = start; ; attempt++) {
      if (link.error !== undefined) return;
      if (this.parts.closing()) {
        this.forget(link, `dial${lane}`);
        return;
      }
      const left = deadline - performance.now();
      // The lane's own path first, then each other path in turn: a path that failed is failed over.
      const path = (lane + attempt) % paths.length;
      try {
        const to = {
          peer: link.peer,
          lane,
          resumeFrom: at.from,
          signal: AbortSignal.timeout(Math.max(1, Math.min(DIAL_MS, left))),
          from: pathFrom(paths, path),
        };
        const { connection, resumeFrom: writeFrom } =
          home !== undefined && attempt === 0
            ? await greetPeer(home, addresses[path], to, handshake)
            : await dialPeer(addresses[path], to, { ...handshake, readBuffer: this.parts.readBuffer });
        if (link.error !== undefined || this.parts.closing()) {
          connection.socket.destroy();
          this.forget(link, `dial${lane}`);
          return;
        }
        const why = this.cannotResend(link, lane, writeFrom);
        confirmResume(connection.socket, why === undefined);
        if (why !== undefined) {
          connection.socket.end();
          this.cannotGoOn(link, lane, writeFrom, why);
          return;
        }
        const moved = path !== lane % paths.length;
        if (moved) {
          link.recovery.failovers++;
          this.away.set(key, { link, lane, probing: false, nextProbe: performance.now() + FAILBACK_PROBE_MS });
        } else if (this.away.delete(key)) link.recovery.failbacks++;
        log(
          'INFO',
          () =>
            `Rank ${handshake.rank}: dialed socket ${lane} to rank ${link.peer} again${moved ? `, over path ${path} (${paths[path]}) instead of path ${lane % paths.length}` : home !== undefined ? `, over its own path ${path} (${paths[path]}) again` : ''}`,
        );
        this.carryOn(link, lane, connection, writeFrom, at, `dial${lane}`);
        return;
      } catch (err) {
        const e = err instanceof TscclError ? err : undefined;
        if (e?.details.errno === 'ECONNREFUSED') {
          this.lose(
            link,
            `Rank ${handshake.rank} lost its connection to rank ${link.peer}, whose address refuses connections: its process is gone`,
            'process-gone',
          );
          return;
        }
        // Refused by the peer (it cannot go on from that frame, or the token does not match).
        if (e !== undefined && e.details.errno === undefined) {
          this.lose(link, e.message, e.details.lost === 'cannot-resume' ? 'cannot-resume' : 'refused');
          return;
        }
        if (performance.now() >= deadline) {
          this.lose(
            link,
            `Rank ${handshake.rank} lost its connection to rank ${link.peer}, and could not dial it again within ${graceMs} ms (TSCCL_RECONNECT_MS): ${(err as Error).message}`,
            'not-reestablished',
          );
          return;
        }
        await new Promise((resolve) => setTimeout(resolve, Math.min(MAX_REDIAL_DELAY_MS, 50 * 2 ** attempt)).unref());
      }
    }
  }

  /** Loses the link for good: `lost` says why, in the error's details (and so in the flight record). */
  private lose(link: PeerLink, message: string, lost: LostBecause): void {
    this.stopWaiting(link);
    if (link.error !== undefined) return;
    const rank = this.parts.handshake.rank;
    link.lose(new TscclError(ErrorCode.PEER_LOST, message, { rank, peer: link.peer, lost }));
    for (const { socket } of link.connections) socket.destroy();
  }
}
