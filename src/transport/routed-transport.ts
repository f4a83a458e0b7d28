import type { Consume, MessageTag, RecoveryCounts, SendHandle, Transport, WaitContext } from './transport.js';

/**
 * One transport over two: peers in this process through shared memory, the others over the
 * network. `localIndex[peer]` is the peer's rank on the local transport, or -1 when remote.
 * Handles keep the communicator's peer numbers, so callers never see the split.
 */
export class RoutedTransport implements Transport {
  readonly rank: number;
  readonly nranks: number;
  private readonly local: Transport;
  private readonly remote: Transport;
  private readonly localIndex: readonly number[];
  private readonly localHandles = new WeakMap<SendHandle, SendHandle>();

  constructor(options: { rank: number; local: Transport; remote: Transport; localIndex: readonly number[] }) {
    this.rank = options.rank;
    this.nranks = options.localIndex.length;
    this.local = options.local;
    this.remote = options.remote;
    this.localIndex = options.localIndex;
  }

  async send(peer: number, channel: number, data: Uint8Array, tag: MessageTag, ctx: WaitContext): Promise<SendHandle> {
    const l = this.localIndex[peer];
    if (l < 0) return this.remote.send(peer, channel, data, tag, ctx);
    const inner = await this.local.send(l, channel, data, tag, ctx);
    const handle = { peer, channel, ticket: inner.ticket };
    this.localHandles.set(handle, inner);
    return handle;
  }

  recv(
    peer: number,
    channel: number,
    bytes: number,
    elementBytes: number,
    tag: MessageTag,
    consume: Consume,
    ctx: WaitContext,
  ): Promise<void> {
    const l = this.localIndex[peer];
    return l < 0
      ? this.remote.recv(peer, channel, bytes, elementBytes, tag, consume, ctx)
      : this.local.recv(l, channel, bytes, elementBytes, tag, consume, ctx);
  }

  isDelivered(handle: SendHandle): boolean {
    const inner = this.localHandles.get(handle);
    return inner === undefined ? this.remote.isDelivered(handle) : this.local.isDelivered(inner);
  }

  waitDelivered(handle: SendHandle, ctx: WaitContext): Promise<void> {
    const inner = this.localHandles.get(handle);
    return inner === undefined ? this.remote.waitDelivered(handle, ctx) : this.local.waitDelivered(inner, ctx);
  }

  /** The network's links recover; peers in this process have none to (the remote transport numbers peers as this one does). */
  recoveries(): RecoveryCounts[] {
    return this.remote.recoveries?.() ?? [];
  }
}
