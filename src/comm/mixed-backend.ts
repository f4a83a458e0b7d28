import type { ErrorCodeValue } from '../errors.js';
import { RoutedTransport } from '../transport/routed-transport.js';
import type { CommBackend, StatusBoard } from './backend.js';
import type { ShmBackend } from './shm-backend.js';
import type { TcpBackend } from './tcp-backend.js';

/** Status of local peers from the shared status words, of remote ones from the TCP links. */
class MixedStatus implements StatusBoard {
  private readonly shm: ShmBackend;
  private readonly tcp: TcpBackend;
  private readonly localIndex: readonly number[];

  constructor(shm: ShmBackend, tcp: TcpBackend, localIndex: readonly number[]) {
    this.shm = shm;
    this.tcp = tcp;
    this.localIndex = localIndex;
  }

  enter(seq: number): void { this.shm.status.enter(seq); this.tcp.status.enter(seq); }
  lastSeenSeq(rank: number): number {
    const l = this.localIndex[rank];
    return l < 0 ? this.tcp.status.lastSeenSeq(rank) : this.shm.status.lastSeenSeq(l);
  }
  fail(code: ErrorCodeValue, seq: number): void { this.shm.status.fail(code, seq); this.tcp.status.fail(code, seq); }
  failedPeer() {
    const local = this.shm.status.failedPeer();
    if (local !== undefined) return { ...local, rank: this.localIndex.indexOf(local.rank) };
    return this.tcp.status.failedPeer();
  }
}

/**
 * Thread ranks of several processes in one communicator: peers in this process through the
 * shared arena, the others over TCP. Shared-memory waits sleep in Atomics.waitAsync, so the
 * event loop keeps serving the sockets.
 */
export class MixedBackend implements CommBackend {
  readonly kind = 'tcp' as const;
  readonly transport: RoutedTransport;
  readonly status: StatusBoard;
  readonly spinMs: number;
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
    this.spinMs = shm.spinMs;
    this.hosts = tcp.hosts;
  }

  jobAbort(): number {
    return this.shm.jobAbort();
  }

  prepareSplit(joins: boolean): number {
    return this.shm.prepareSplit(joins);
  }

  async completeSplit(split: { members: number[]; contributions: number[]; rank: number; name: string; timeoutMs: number }): Promise<CommBackend> {
    const me = this.processOf[split.members[split.rank]];
    const processOf = split.members.map((m) => this.processOf[m]);
    const local = split.members.map((_, i) => i).filter((i) => processOf[i] === me);
    const [shm, tcp] = await Promise.all([
      this.shm.completeSplit({ contributions: local.map((i) => split.contributions[i]), rank: local.indexOf(split.rank) }),
      this.tcp.completeSplit(split),
    ]);
    return new MixedBackend(shm as ShmBackend, tcp as TcpBackend, processOf);
  }

  abandonSplit(): void {}

  async close(): Promise<void> {
    await Promise.all([this.shm.close(), this.tcp.close()]);
  }
}
