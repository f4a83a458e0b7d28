import { type Server, type Socket, connect, createServer } from 'node:net';
import { ErrorCode, TscclError, rankList } from '../../errors.js';
import { log } from '../../log.js';
import type { Store } from '../../store/store.js';
import { hostKey } from '../../topology/host-key.js';
import { readableInPlace } from './accepted-socket.js';
import {
  type HandshakeOptions,
  acceptHello,
  checkHello,
  refuseResume,
  resumeConfirmed,
  sayHello,
} from './handshake.js';
import { Intake, readInto } from './intake.js';
import type { Connection } from './peer-link.js';

/** Where and how to meet the peers. */
export interface MeshOptions extends HandshakeOptions {
  /** Rendezvous: each rank publishes its address here and reads its peers'. */
  readonly store: Store;
  readonly commName: string;
  /**
   * Addresses to listen on, one per network path (interface); lane i of every peer pair runs over
   * path i modulo their count, from this rank's address of that path.
   */
  readonly paths: readonly string[];
  /** The memory every socket reads into (see Intake). */
  readonly readBuffer: Uint8Array;
  /** Gives up building the mesh, closing whatever it holds. */
  readonly signal?: AbortSignal;
}

/** Where a rank listens on one path. */
export interface PathAddress {
  readonly host: string;
  readonly port: number;
}

/**
 * What a rank does with a peer's hello that replaces a broken socket (reconnect.ts), the peer
 * needing this rank's frames from `resumeFrom` on. Accepting names the frame this rank needs
 * from there on; once the peer confirms it can go on from it, `accept` takes the new socket,
 * else `cannot` is called.
 */
export type ResumeHandler = (
  peer: number,
  lane: number,
  resumeFrom: number,
) =>
  | { readonly readFrom: number; readonly accept: (connection: Connection) => void; readonly cannot: () => void }
  | { readonly refuse: string }
  | { readonly drop: string };

/** Every connection of one rank, by peer and lane. */
export interface Mesh {
  /**
   * One socket per lane to each peer, which both ranks read and write (no acknowledgement travels
   * alone while replies flow both ways): the higher rank of each pair dialed it.
   */
  readonly connections: Map<number, Connection[]>;
  /** Each rank's host key (topology/host-key.ts), by rank. */
  readonly hostKeys: string[];
  /** Where each peer listens, one address per path, by rank: where a broken socket is dialed again. */
  readonly addresses: Map<number, readonly PathAddress[]>;
  /**
   * Once the mesh is up, the listener stays open for one purpose: a peer's hello that replaces a
   * broken socket goes to this handler (until one is set, it is refused). New sockets are refused.
   */
  resumeWith(handler: ResumeHandler): void;
  /** Stops listening. */
  close(): void;
}

/** Whether `rank` dials its sockets to `peer` (and dials them again when they break): the higher rank of a pair does. */
export function dials(rank: number, peer: number): boolean {
  return rank > peer;
}

/**
 * Builds the full mesh: listens on every path, publishes this rank's addresses in the store,
 * dials every lower-ranked peer on every lane (lane i over path i modulo the paths) and accepts
 * every higher-ranked peer's lanes. Once every expected peer is in, new sockets are refused; the
 * listeners stay open only for sockets that replace broken ones (reconnect.ts). On failure no
 * socket stays open.
 */
export async function buildMesh(options: MeshOptions): Promise<Mesh> {
  const { rank, nranks, store, commName, paths } = options;
  const connections = new Map<number, Connection[]>();
  const addresses = new Map<number, readonly PathAddress[]>();
  const servers = paths.map(() => createServer());
  const closeAll = () => {
    for (const server of servers) server.close();
  };
  const resume: { handler?: ResumeHandler } = {};
  const accepted = acceptPeers(servers, options, connections, resume);
  const mine: PathAddress[] = [];
  try {
    for (const [i, server] of servers.entries()) {
      await new Promise<void>((resolve, reject) => {
        server.once('error', reject);
        server.listen(0, paths[i], () => resolve());
      });
      mine.push({ host: paths[i], port: (server.address() as { port: number }).port });
    }
  } catch (err) {
    closeAll();
    throw err;
  }
  const myKey = hostKey();
  await store.set(`tcp/${commName}/${rank}`, Buffer.from(JSON.stringify({ paths: mine, hostKey: myKey })), {
    timeoutMs: options.timeoutMs,
    signal: options.signal,
  });
  const peers = Array.from({ length: nranks }, (_, peer) => peer);
  let hostKeys: string[];
  let failed = false;
  // One socket left behind would keep the process alive after its work.
  const dropAll = () => {
    for (const lanes of connections.values()) for (const c of lanes) c?.socket.destroy();
  };
  try {
    [, hostKeys] = await Promise.all([
      accepted,
      Promise.all(
        peers.map(async (peer) => {
          if (peer === rank) return myKey;
          const where = JSON.parse(
            Buffer.from(
              await store.get(`tcp/${commName}/${peer}`, { timeoutMs: options.timeoutMs, signal: options.signal }),
            ).toString(),
          ) as { paths: PathAddress[]; hostKey: string };
          if (where.paths.length !== paths.length)
            throw new TscclError(
              ErrorCode.INVALID_ARGUMENT,
              `Rank ${rank} has ${paths.length} network path(s) and rank ${peer} ${where.paths.length}: TSCCL_SOCKET_IFNAME must choose as many interfaces on every host`,
              { rank, peer, argument: 'TSCCL_SOCKET_IFNAME' },
            );
          addresses.set(peer, where.paths);
          if (!dials(rank, peer)) return where.hostKey;
          const dialed = await Promise.all(
            Array.from({ length: options.lanes }, (_, lane) =>
              dialPeer(where.paths[lane % paths.length], { peer, lane, from: pathFrom(paths, lane) }, options),
            ),
          );
          connections.set(
            peer,
            dialed.map((d) => d.connection),
          );
          if (failed) dropAll(); // a dial that completed after the rendezvous had already failed
          return where.hostKey;
        }),
      ),
    ]);
  } catch (err) {
    failed = true;
    dropAll();
    closeAll();
    throw err;
  }
  // Listening on must not keep the process alive.
  for (const server of servers) server.unref();
  return {
    connections,
    hostKeys,
    addresses,
    resumeWith: (handler) => {
      resume.handler = handler;
    },
    close: closeAll,
  };
}

/** The local address lane `lane` leaves from: its path's, where there are several (one path: the kernel's choice). */
export function pathFrom(paths: readonly string[], lane: number): string | undefined {
  return paths.length > 1 ? paths[lane % paths.length] : undefined;
}

/**
 * Accepts the connections of every higher-ranked peer, lane by lane, then only hellos that
 * replace a broken socket (handed to `resume.handler`); anything else is refused and logged.
 */
function acceptPeers(
  servers: readonly Server[],
  options: MeshOptions,
  sockets: Map<number, Connection[]>,
  resume: { handler?: ResumeHandler },
): Promise<void> {
  const { rank, nranks, lanes } = options;
  const dialers = Array.from({ length: nranks }, (_, r) => r).filter((r) => dials(r, rank));
  const complete = (r: number) => (sockets.get(r)?.filter(Boolean).length ?? 0) === lanes;
  return new Promise<void>((resolve, reject) => {
    if (dialers.length === 0) return resolve();
    const timer = setTimeout(
      () =>
        reject(
          new TscclError(
            ErrorCode.TIMEOUT,
            `Rank ${rank} timed out after ${options.timeoutMs} ms waiting for ${rankList(dialers.filter((r) => !complete(r)))} to connect`,
            { rank },
          ),
        ),
      options.timeoutMs,
    );
    options.signal?.addEventListener(
      'abort',
      () => {
        clearTimeout(timer);
        reject(
          new TscclError(
            ErrorCode.ABORTED,
            `Rank ${rank} stopped building its connections: ${String(options.signal?.reason)}`,
            { rank },
          ),
        );
      },
      { once: true },
    );
    const onConnection = (socket: Socket) => {
      socket.setNoDelay(true);
      socket.on('error', () => {});
      const refuse = (why: string) => {
        log('WARN', () => `rank ${rank} refused a connection from ${socket.remoteAddress}: ${why}`);
        socket.destroy();
      };
      checkHello(socket, options).then(
        async ({ peer, lane, intake, resumeFrom }) => {
          if (!dials(peer, rank) || peer >= nranks || lane >= lanes)
            return refuse(`unexpected rank ${peer} socket ${lane}`);
          if (resumeFrom > 0) {
            const decision = resume.handler?.(peer, lane, resumeFrom) ?? {
              drop: 'the connections are still being built',
            };
            if ('accept' in decision) {
              acceptHello(socket, decision.readFrom);
              if (await resumeConfirmed(socket, intake, options.timeoutMs))
                decision.accept(readableInPlace(socket, intake, options.readBuffer));
              else {
                socket.destroy();
                decision.cannot();
              }
            } else if ('refuse' in decision) {
              log('WARN', () => `rank ${rank} cannot resume socket ${lane} from rank ${peer}: ${decision.refuse}`);
              refuseResume(socket);
            } else refuse(`rank ${peer} asked to resume socket ${lane}, but ${decision.drop}`);
            return;
          }
          if (sockets.get(peer)?.[lane] !== undefined) return refuse(`unexpected rank ${peer} socket ${lane}`);
          acceptHello(socket);
          let peerLanes = sockets.get(peer);
          if (peerLanes === undefined) sockets.set(peer, (peerLanes = new Array<Connection>(lanes)));
          peerLanes[lane] = readableInPlace(socket, intake, options.readBuffer);
          if (dialers.every(complete)) {
            clearTimeout(timer);
            resolve();
          }
        },
        (err: Error) => refuse(err.message),
      );
    };
    for (const server of servers) server.on('connection', onConnection);
  });
}

/** A dialed socket the peer accepted, and the first frame the peer needs on it (0 for a new socket). */
export interface Dialed {
  readonly connection: Connection;
  readonly resumeFrom: number;
}

/** Dials one lane to a peer and says hello (`resumeFrom`: to replace a broken socket); the socket reads into `readBuffer`. */
export async function dialPeer(
  where: PathAddress,
  to: { peer: number; lane: number; resumeFrom?: number; signal?: AbortSignal; from?: string | undefined },
  options: HandshakeOptions & { readonly readBuffer: Uint8Array },
): Promise<Dialed> {
  const connection = await connectPeer(where, to, options);
  return greetPeer(connection, where, to, options);
}

/** Opens a socket to a peer's listener (`from`: the local address to leave from), before any hello. */
export async function connectPeer(
  where: PathAddress,
  to: { peer: number; signal?: AbortSignal; from?: string | undefined },
  options: { readonly rank: number; readonly readBuffer: Uint8Array },
): Promise<Connection> {
  const { host, port } = where;
  const { rank } = options;
  const intake = new Intake();
  const socket = connect({
    host,
    port,
    ...(to.from === undefined ? {} : { localAddress: to.from }),
    ...readInto(options.readBuffer, intake),
  });
  socket.setNoDelay(true);
  const stopWatching = giveUpOnAbort(socket, to.signal);
  try {
    await new Promise<void>((resolve, reject) => {
      socket.once('connect', resolve);
      socket.once('error', (err: NodeJS.ErrnoException) =>
        reject(
          new TscclError(
            ErrorCode.PEER_LOST,
            `Rank ${rank} cannot connect to rank ${to.peer} at ${host}:${port}: ${err.message}`,
            { rank, peer: to.peer, ...(err.code === undefined ? {} : { errno: err.code }) },
          ),
        ),
      );
    });
  } finally {
    stopWatching();
  }
  return { socket, intake };
}

/** Says hello on a connected socket (`resumeFrom`: it replaces a broken one); destroys it if the peer does not accept. */
export async function greetPeer(
  connection: Connection,
  where: PathAddress,
  to: { peer: number; lane: number; resumeFrom?: number; signal?: AbortSignal },
  options: HandshakeOptions,
): Promise<Dialed> {
  const { socket, intake } = connection;
  const stopWatching = giveUpOnAbort(socket, to.signal);
  try {
    const resumeFrom = await sayHello(socket, intake, { ...to, where: `${where.host}:${where.port}` }, options);
    return { connection, resumeFrom };
  } catch (err) {
    socket.destroy();
    throw err;
  } finally {
    stopWatching();
  }
}

/**
 * A dial of a broken socket gives up at its own deadline (a host that does not answer at all):
 * `socket` is destroyed with ETIMEDOUT once `signal` aborts, or at once if it has. Returns the
 * function that stops watching.
 */
function giveUpOnAbort(socket: Socket, signal: AbortSignal | undefined): () => void {
  const giveUp = () =>
    socket.destroy(Object.assign(new Error("no answer within the attempt's time"), { code: 'ETIMEDOUT' }));
  if (signal?.aborted) giveUp();
  else signal?.addEventListener('abort', giveUp, { once: true });
  return () => signal?.removeEventListener('abort', giveUp);
}
