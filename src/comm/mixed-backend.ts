import type { ErrorCodeValue } from '../errors.js';
import { RoutedTransport } from '../transport/routed-transport.js';
import { spinBudgetMs } from '../transport/wait.js';
import type { CommBackend, ShrinkRequest, StatusBoard } from './backend.js';
import type { ShmBackend } from './shm-backend.js';
import type { TcpBackend } from './tcp-backend.js';

/** Status of local peers from the shared status words, of remote ones from the TCP links. */
class MixedStatus implements StatusBoard {
  private readonly shm: ShmBackend;
  private readonly tcp: TcpBackend;
  private readonly localIndex: readonly number[];
  /** The last participants asked about, as local indices and remote ranks. */
  private sides: { peers: readonly number[]; local: number[]; remote: number[] } | undefined;

  constructor(shm: ShmBackend, tcp: TcpBackend, localIndex: readonly number[]) {
    this.shm = shm;
    this.tcp = tcp;
    this.localIndex = localIndex;
  }

  enter(seq: number): void {
    this.shm.status.enter(seq);
    this.tcp.status.enter(seq);
  }
  lastSeenSeq(rank: number): number {
    const l = this.localIndex[rank];
    return l < 0 ? this.tcp.status.lastSeenSeq(rank) : this.shm.status.lastSeenSeq(l);
  }
  fail(code: ErrorCodeValue, seq: number, origin: number): void {
    this.shm.status.fail(code, seq, origin);
    this.tcp.status.fail(code, seq, origin);
  }
  announce(seq: number): void {
    this.tcp.status.announce(seq);
  }
  end(seq: number): void {
    this.shm.status.end(seq);
    this.tcp.status.end(seq);
  }
  failedBefore(peers: readonly number[], seq: number | undefined) {
    // Collectives pass the same participants array every call: split it once.
    if (this.sides?.peers !== peers) {
      this.sides = {
        peers,
        local: peers.map((r) => this.localIndex[r]).filter((l) => l >= 0),
        remote: peers.filter((r) => this.localIndex[r] < 0),
      };
    }
    // Origins are written in this communicator's numbering by every rank of a mixed communicator.
    return this.shm.status.failedBefore(this.sides.local, seq) ?? this.tcp.status.failedBefore(this.sides.remote, seq);
  }
}

/**
 * Thread ranks of several processes in one communicator: peers in this process through the
 * shared arena, the others over TCP. Shared-memory waits sleep in Atomics.waitAsync, so the
 * event loop keeps serving the sockets.
 */
export class MixedBackend implements CommBackend {
  readonly kind = 'tcp' as const;
  readonly sharesMemory = true;
  readonly transport: RoutedTransport;
  readonly status: StatusBoard;
  readonly spinMs: number;
  /** Its waits also keep the event loop that reads its sockets stalled while they spin: they never linger to yield. */
  readonly spinYields = false;
  readonly oversubscribed: boolean;
  readonly machineThreads: number;
  readonly hosts: readonly number[] | undefined;
  private readonly shm: ShmBackend;
  private readonly tcp: TcpBackend;
  /** Process of every rank of this communicator. */
  private readonly processOf: readonly number[];

  constructor(shm: ShmBackend, tcp: TcpBackend, processOf: readonly number[]) {
    this.shm = shm;
    this.tcp = tcp;
    this.processOf = processOf;
    const me = tcp.transport.rank;
    let next = 0;
    const localIndex = processOf.map((p) => (p === processOf[me] ? next++ : -1));
    this.transport = new RoutedTransport({ rank: me, local: shm.transport, remote: tcp.transport, localIndex });
    this.status = new MixedStatus(shm, tcp, localIndex);
    // The threads of this process are not all that share its cores: count every rank on the
    // machine, as the TCP side does before it polls (2 processes x 2 threads on 2 cores, 8 B
    // all-reduce: 2481 us a call spinning 2 ms per wait, as one process's 2 threads would).
    this.machineThreads = tcp.machineThreads;
    this.spinMs = spinBudgetMs(this.machineThreads);
    this.oversubscribed = shm.oversubscribed;
    this.hosts = tcp.hosts;
  }

  lostRank(seq: number | undefined): number | undefined {
    const local = this.shm.lostRank(seq);
    if (local === undefined) return undefined;
    const me = this.processOf[this.tcp.transport.rank];
    return this.processOf.map((p, r) => (p === me ? r : -1)).filter((r) => r >= 0)[local];
  }

  prepareSplit(joins: boolean): number {
    return this.shm.prepareSplit(joins);
  }

  async completeSplit(split: {
    members: number[];
    contributions: number[];
    rank: number;
    name: string;
    timeoutMs: number;
  }): Promise<CommBackend> {
    const me = this.processOf[split.members[split.rank]];
    const processOf = split.members.map((m) => this.processOf[m]);
    const local = split.members.map((_, i) => i).filter((i) => processOf[i] === me);
    const [shm, tcp] = await Promise.all([
      this.shm.completeSplit({
        members: local.map((i) => this.localRank(split.members[i])),
        contributions: local.map((i) => split.contributions[i]),
        rank: local.indexOf(split.rank),
      }),
      this.tcp.completeSplit(split),
    ]);
    return new MixedBackend(shm as ShmBackend, tcp as TcpBackend, processOf);
  }

  abandonSplit(): void {}

  async shrink(request: ShrinkRequest): Promise<CommBackend> {
    const me = this.processOf[this.tcp.transport.rank];
    const processOf = request.survivors.map((r) => this.processOf[r]);
    const local = request.survivors.filter((r) => this.processOf[r] === me).map((r) => this.localRank(r));
    const [shm, tcp] = await Promise.all([this.shm.shrink({ ...request, survivors: local }), this.tcp.shrink(request)]);
    return new MixedBackend(shm as ShmBackend, tcp as TcpBackend, processOf);
  }

  /** A rank's index among the ranks of its process. */
  private localRank(rank: number): number {
    return this.processOf.slice(0, rank).filter((p) => p === this.processOf[rank]).length;
  }

  wakeAll(): void {
    this.tcp.wakeAll();
  }

  async close(): Promise<void> {
    await Promise.all([this.shm.close(), this.tcp.close()]);
  }
}
