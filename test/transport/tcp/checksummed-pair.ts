import { MemoryStore } from '../../../src/store/memory-store.js';
import { TcpTransport, type TcpTransportOptions } from '../../../src/transport/tcp/tcp-transport.js';

let meshes = 0;

/**
 * Two checksummed TCP transports of one process, rank 0 and rank 1, on a communicator of their
 * own; `options` override for both, `perRank` for one.
 */
export function checksummedPair(
  options: Partial<TcpTransportOptions> = {},
  perRank: [Partial<TcpTransportOptions>?, Partial<TcpTransportOptions>?] = [],
): Promise<[TcpTransport, TcpTransport]> {
  const store = new MemoryStore();
  const commName = `checksummed-${++meshes}`;
  const make = (rank: number) =>
    TcpTransport.create({
      rank,
      nranks: 2,
      store,
      commName,
      host: '127.0.0.1',
      timeoutMs: 10_000,
      checksum: true,
      ...options,
      ...perRank[rank],
    });
  return Promise.all([make(0), make(1)]);
}
