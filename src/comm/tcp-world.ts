import { paramInt, paramString } from '../config/params.js';
import { ErrorCode, TscclError, invalidArgument } from '../errors.js';
import type { EnvJob } from '../job/env-job.js';
import { Arena } from '../memory/arena.js';
import { anyAddressFor, isLoopbackAddress, loopbackFor } from '../security/job-token.js';
import { PrefixStore } from '../store/store.js';
import { TcpStoreClient } from '../store/tcp-store-client.js';
import { TcpStoreServer } from '../store/tcp-store-server.js';
import { selectInterfaces } from '../transport/tcp/interfaces.js';
import { checksumDefault } from './call-defaults.js';
import { Communicator } from './communicator.js';
import { TcpBackend } from './tcp-backend.js';

/**
 * The world communicator of a process rank: rank 0 serves the store unless a launcher does,
 * every rank connects to it, and the ranks build a TCP mesh through it.
 */
export async function createTcpWorld(
  job: EnvJob,
  { defaultTimeoutMs, arena = Arena.create() }: { defaultTimeoutMs: number; arena?: Arena },
): Promise<Communicator> {
  const backend = await connectTcpWorld(job, { rank: job.rank, size: job.size, arena, defaultTimeoutMs });
  return new Communicator({ arena, backend, name: 'world', defaultTimeoutMs });
}

/**
 * The TCP side of a job's world communicator for job rank `rank` of `size`: rank 0 serves the
 * store unless a launcher does; every rank connects and joins the mesh. Sockets read into
 * `arena` memory, so reductions run on received bytes in place.
 */
export async function connectTcpWorld(
  job: EnvJob,
  where: {
    rank: number;
    size: number;
    arena: Arena;
    defaultTimeoutMs: number;
    /** The mesh's name in the store: another mesh of the same ranks takes another (a progress engine's inline twin). */
    name?: string;
    /** Whether rank 0 serves the store when no launcher does; a second mesh finds it served. */
    serveStore?: boolean;
  },
): Promise<TcpBackend> {
  const { rank, size, arena, defaultTimeoutMs, name = 'world', serveStore = true } = where;
  const loopback = isLoopbackAddress(job.masterAddr) || job.masterAddr === 'localhost';
  if (!loopback && job.token === undefined && !job.allowInsecure) {
    throw invalidArgument(
      `A job whose store is at ${job.masterAddr} (not loopback) needs TSCCL_JOB_TOKEN, the same on every rank (or TSCCL_ALLOW_INSECURE=1)`,
      { argument: 'TSCCL_JOB_TOKEN' },
    );
  }
  let server: TcpStoreServer | undefined;
  if (rank === 0 && !job.storeHosted && serveStore) {
    server = await TcpStoreServer.listen({
      host: loopback ? loopbackFor(job.masterAddr) : anyAddressFor(job.masterAddr),
      port: job.masterPort,
      token: job.token,
      allowInsecureRemote: job.allowInsecure,
    }).catch((err: Error) => {
      throw new TscclError(
        ErrorCode.INVALID_ARGUMENT,
        `Rank 0 cannot serve the store on port ${job.masterPort}: ${err.message}`,
        { rank: 0, argument: 'MASTER_PORT' },
      );
    });
    server.unref();
  }
  const client = await TcpStoreClient.connect({
    host: loopback ? loopbackFor(job.masterAddr) : job.masterAddr,
    port: job.masterPort,
    token: job.token,
    connectTimeoutMs: defaultTimeoutMs,
    timeoutMs: defaultTimeoutMs,
  });
  client.unref();
  const paths = loopback ? [loopbackFor(job.masterAddr)] : listenAddresses();
  return TcpBackend.create(
    { rank, nranks: size, name },
    {
      store: new PrefixStore('tsccl', client),
      host: paths[0],
      paths,
      token: job.token,
      allowInsecureRemote: job.allowInsecure,
      timeoutMs: defaultTimeoutMs,
      socketsPerPeer: paramInt('TSCCL_NSOCKS_PERPEER', process.env, 1),
      heartbeatTimeoutMs: paramInt('TSCCL_HEARTBEAT_TIMEOUT_MS', process.env, 1),
      resendRetries: paramInt('TSCCL_RESEND_RETRIES', process.env, 0),
      resendWindowBytes: paramInt('TSCCL_RESEND_WINDOW_BYTES', process.env, 0),
      reconnectMs: paramInt('TSCCL_RECONNECT_MS', process.env, 0),
      // What calls checksum by default (TSCCL_CHECKSUM), as the transport's failover watch needs to know.
      ...(checksumDefault === undefined ? {} : { checksum: checksumDefault }),
      readMemory: (bytes) => arena.allocateOwned(Uint8Array, bytes, 1),
    },
  );
}

/**
 * The addresses peers dial this rank at when the store is not on loopback, so peers may be on
 * other hosts: loopback is never chosen unless TSCCL_SOCKET_IFNAME names it (peers elsewhere
 * would dial their own loopback and be refused). One, unless TSCCL_SOCKET_IFNAME chooses several
 * interfaces: then one per interface, each a network path of its own.
 */
function listenAddresses(): string[] {
  const family = paramString('TSCCL_SOCKET_FAMILY') === 'AF_INET6' ? 'IPv6' : 'IPv4';
  const filter = process.env.TSCCL_SOCKET_IFNAME;
  const chosen = selectInterfaces(filter).filter(
    (i) => i.family === family && ((filter !== undefined && filter !== '') || !i.internal),
  );
  if (chosen.length === 0) {
    throw invalidArgument(
      `No ${family} address that other hosts can reach on ${filter ? `the interfaces TSCCL_SOCKET_IFNAME=${filter} chooses` : 'this host (only loopback is up)'}; the job's store is at a non-loopback address`,
      { argument: 'TSCCL_SOCKET_IFNAME' },
    );
  }
  // Several interfaces named on purpose are several paths: one address each, in the order found.
  if (filter === undefined || filter === '') return [chosen[0].address];
  const byInterface = new Map<string, string>();
  for (const i of chosen) if (!byInterface.has(i.name)) byInterface.set(i.name, i.address);
  return [...byInterface.values()];
}
