import { log } from '../../log.js';
import { dials } from './mesh.js';
import type { PeerLink } from './peer-link.js';
import type { Reconnector } from './reconnect.js';
import { PATH_CHECK_MS, PATH_SILENCE_MS } from './tcp-tunables.js';

/**
 * With several network paths, finds sockets whose path failed. A path that goes down does not
 * close its sockets (TCP only stalls), so heartbeats go on every socket, and a socket silent for
 * PATH_SILENCE_MS while its peer is heard on another is taken down by the rank that dialed it,
 * which dials it again over another path. A link silent on every socket is the heartbeat timeout's to judge.
 * Sockets moved to another path try their own again on the same beat (Reconnector.failBack).
 */
export class PathWatch {
  private readonly timer: NodeJS.Timeout;
  private readonly reconnector: Reconnector;
  private readonly self: { rank: number; closing: () => boolean };

  /** Watches `links` (those whose frames carry checksums, so a socket can go on where it stopped). */
  constructor(links: readonly PeerLink[], reconnector: Reconnector, self: { rank: number; closing: () => boolean }) {
    this.reconnector = reconnector;
    this.self = self;
    this.timer = setInterval(() => this.check(links), PATH_CHECK_MS);
    this.timer.unref();
  }

  stop(): void {
    clearInterval(this.timer);
  }

  private check(links: readonly PeerLink[]): void {
    if (this.self.closing()) return;
    const now = performance.now();
    for (const link of links) {
      if (
        link.error !== undefined ||
        link.saidGoodbye ||
        link.connections.length < 2 ||
        !dials(this.self.rank, link.peer)
      )
        continue;
      link.refreshHeard(now);
      if (now - Math.max(...link.laneHeard) > PATH_SILENCE_MS) continue;
      link.connections.forEach((connection, lane) => {
        const silent = now - link.laneHeard[lane];
        if (silent <= PATH_SILENCE_MS || connection.socket.destroyed || this.reconnector.redialing(link, lane)) return;
        log(
          'INFO',
          () =>
            `Rank ${this.self.rank}: socket ${lane} from rank ${link.peer} has been silent for ${Math.round(silent)} ms while the others carry: its path failed`,
        );
        this.reconnector.pathFailed(link, lane);
        connection.socket.destroy();
      });
    }
    this.reconnector.failBack(now);
  }
}
