import { executorHosts } from '../algorithms/schedule.js';
import type { ErrorCodeValue } from '../errors.js';
import { PrefixStore, type Store } from '../store/store.js';
import { TcpTransport, type TcpTransportOptions } from '../transport/tcp/tcp-transport.js';
import { RECONNECT_MS } from '../transport/tcp/tcp-tunables.js';
import { hostIndices } from '../topology/host-key.js';
import {
  type CommBackend,
  type RebuildRequest,
  type ShrinkRequest,
  type StatusBoard,
  deadSurvivorError,
} from './backend.js';
import { meetForRetry } from './retry-meeting.js';

/** The status board of a TCP communicator: learnt from frames, failures announced on a control channel. */
class TcpStatus implements StatusBoard {
  private readonly transport: TcpTransport;

  constructor(transport: TcpTransport) {
    this.transport = transport;
  }

  enter(seq: number): void {
    this.transport.progress.entered = seq;
  }
  lastSeenSeq(rank: number): number {
    return rank === this.transport.rank ? this.transport.progress.entered : this.transport.lastSeqFrom(rank);
  }
  fail(code: ErrorCodeValue, seq: number, origin: number): void {
    this.transport.announceFailure(code, seq, origin, this.transport.progress.ended);
  }
  announce(seq: number): void {
    this.transport.announceSeq(seq);
  }
  end(seq: number): void {
    this.transport.progress.ended = seq;
  }
  failedBefore(peers: readonly number[], seq: number | undefined) {
    return this.transport.failedBefore(peers, seq);
  }
}

export interface TcpBackendOptions extends Omit<TcpTransportOptions, 'rank' | 'nranks' | 'commName' | 'store'> {
  /** The job's store; every communicator rendezvous under its own name in it. */
  readonly store: Store;
}

/** Which communicator a backend serves, and this rank's place in it. */
export interface TcpMember {
  readonly rank: number;
  readonly nranks: number;
  /** The communicator's name: it rendezvous under it in the store. */
  readonly name: string;
}

/** Ranks in separate processes or hosts: a full mesh of authenticated TCP links per communicator. */
export class TcpBackend implements CommBackend {
  readonly kind = 'tcp' as const;
  readonly sharesMemory = false;
  readonly transport: TcpTransport;
  readonly status: StatusBoard;
  /** A synchronous spin would stall the event loop that reads the sockets: the transport polls that loop itself (receivePollMs). */
  readonly spinMs = 0;
  readonly spinYields = false;
  readonly oversubscribed = false;
  readonly machineThreads: number;
  readonly hosts: readonly number[] | undefined;
  private readonly options: TcpBackendOptions;

  private constructor(transport: TcpTransport, options: TcpBackendOptions) {
    this.transport = transport;
    this.machineThreads = transport.machineRanks;
    this.status = new TcpStatus(transport);
    this.options = options;
    this.hosts = executorHosts(hostIndices(transport.hostKeys));
  }

  static async create(member: TcpMember, options: TcpBackendOptions): Promise<TcpBackend> {
    const { rank, nranks, name } = member;
    const transport = await TcpTransport.create({
      ...options,
      rank,
      nranks,
      commName: name,
      store: new PrefixStore('comm', options.store),
    });
    return new TcpBackend(transport, options);
  }

  /** A dead process shows as a closed connection, reported through the status board. */
  lostRank(): number | undefined {
    return undefined;
  }

  prepareSplit(): number {
    return 0;
  }

  completeSplit(split: { members: number[]; rank: number; name: string; timeoutMs: number }): Promise<CommBackend> {
    return TcpBackend.create(
      { rank: split.rank, nranks: split.members.length, name: split.name },
      { ...this.options, timeoutMs: split.timeoutMs },
    );
  }

  abandonSplit(): void {}

  /**
   * Survivors build a fresh mesh through the store, under the shrunk communicator's name. While
   * they meet, this rank watches its old links: a survivor that dies meanwhile (or, meeting for a
   * sibling, destroys the communicator) fails the meeting at once instead of at the timeout.
   */
  async shrink(request: ShrinkRequest): Promise<CommBackend> {
    const me = this.transport.rank;
    // A shrink that fails stops its meeting too, or the meeting's timers would keep the process alive.
    const abandon = new AbortController();
    const creating = TcpBackend.create(
      { rank: request.survivors.indexOf(me), nranks: request.survivors.length, name: request.name },
      { ...this.options, timeoutMs: request.timeoutMs, signal: abandon.signal },
    );
    let watch: NodeJS.Timeout | undefined;
    const deadSurvivor = new Promise<never>((_, reject) => {
      const look = () => {
        const dead = this.transport.lostPeers().find((r) => request.survivors.includes(r));
        if (dead !== undefined) return reject(deadSurvivorError(request, me, dead));
        // A shrink's survivor may destroy this communicator once its own side has met.
        if (request.sibling !== true) return;
        const departed = this.transport.departedPeers().find((r) => request.survivors.includes(r));
        if (departed !== undefined) reject(deadSurvivorError(request, me, departed, 'said goodbye'));
      };
      watch = setInterval(look, 50);
      look();
    });
    try {
      return await Promise.race([creating, deadSurvivor]);
    } catch (err) {
      // The meeting may still finish or fail later; close or swallow it, never leave it dangling.
      creating.then(
        (backend) => backend.close(),
        () => undefined,
      );
      abandon.abort(err);
      throw err;
    } finally {
      clearInterval(watch);
    }
  }

  /**
   * The ranks meet through the store (retry-meeting.ts); if every one can run the call again, they
   * build a new mesh under the request's name. A rank waits for the others as long as a broken
   * socket may take to come back (TSCCL_RECONNECT_MS), within the call's time.
   */
  async rebuild(request: RebuildRequest): Promise<{ backend: CommBackend } | { refused: string }> {
    const { rank, nranks } = this.transport;
    const waitMs = Math.min(
      request.timeoutMs,
      this.transport.reconnectMs > 0 ? this.transport.reconnectMs : RECONNECT_MS,
    );
    let refused: string | undefined;
    // A peer found gone while the others are awaited ends the wait: it will never come.
    const stop = new AbortController();
    const watch = setInterval(() => {
      const why = this.transport.goneReason();
      if (why !== undefined) stop.abort(`this rank found that ${why}`);
    }, 50);
    try {
      refused = await meetForRetry(new PrefixStore('retry', this.options.store), {
        name: request.name,
        rank,
        nranks,
        seq: request.seq,
        veto: request.veto ?? this.transport.goneReason(),
        waitMs,
        signal: request.signal === undefined ? stop.signal : AbortSignal.any([request.signal, stop.signal]),
      });
    } catch (err) {
      refused = `the ranks could not meet: ${(err as Error).message}`;
    } finally {
      clearInterval(watch);
    }
    if (refused !== undefined) return { refused };
    try {
      return {
        backend: await TcpBackend.create(
          { rank, nranks, name: request.name },
          { ...this.options, timeoutMs: request.timeoutMs, ...(request.signal ? { signal: request.signal } : {}) },
        ),
      };
    } catch (err) {
      return { refused: `the new connections could not be made: ${(err as Error).message}` };
    }
  }

  wakeAll(): void {
    this.transport.wakeAll();
  }

  async close(): Promise<void> {
    await this.transport.close();
  }
}
