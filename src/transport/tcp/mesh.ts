import { type Server, connect, createServer } from 'node:net';
import { ErrorCode, TscclError, rankList } from '../../errors.js';
import { log } from '../../log.js';
import type { Store } from '../../store/store.js';
import { hostKey } from '../../topology/host-key.js';
import { type HandshakeOptions, acceptHello, checkHello, sayHello } from './handshake.js';
import { Intake, readInto } from './intake.js';
import type { Connection } from './peer-link.js';

/** Where and how to meet the peers. */
export interface MeshOptions extends HandshakeOptions {
  /** Rendezvous: each rank publishes its address here and reads its peers'. */
  readonly store: Store;
  readonly commName: string;
  /** Address to listen on. */
  readonly host: string;
  /** The memory every dialed socket reads into (see Intake). */
  readonly readBuffer: Uint8Array;
  /** Gives up building the mesh, closing whatever it holds. */
  readonly signal?: AbortSignal;
}

/** Every connection of one rank, by peer and lane. */
export interface Mesh {
  /** The sockets peers dialed: this rank writes on them. */
  readonly outbound: Map<number, Connection[]>;
  /** The sockets this rank dialed: it reads the peer's frames from them. */
  readonly inbound: Map<number, Connection[]>;
  /** Each rank's host key (topology/host-key.ts), by rank. */
  readonly hostKeys: string[];
}

/**
 * Builds the full mesh: listens, publishes this rank's address in the store, dials every peer on
 * every lane and accepts every peer's lanes. The listener closes once every expected peer is in,
 * so nobody else can join. On failure no socket stays open.
 */
export async function buildMesh(options: MeshOptions): Promise<Mesh> {
  const { rank, nranks, store, commName, host } = options;
  const outbound = new Map<number, Connection[]>();
  const inbound = new Map<number, Connection[]>();
  const server = createServer();
  const accepted = acceptPeers(server, options, outbound);
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, host, () => resolve());
  });
  const port = (server.address() as { port: number }).port;
  const myKey = hostKey();
  await store.set(`tcp/${commName}/${rank}`, Buffer.from(JSON.stringify({ host, port, hostKey: myKey })), {
    timeoutMs: options.timeoutMs,
    signal: options.signal,
  });
  const peers = Array.from({ length: nranks }, (_, peer) => peer);
  let hostKeys: string[];
  let failed = false;
  // One socket left behind would keep the process alive after its work.
  const dropAll = () => {
    for (const lanes of [...outbound.values(), ...inbound.values()]) for (const c of lanes) c?.socket.destroy();
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
          ) as { host: string; port: number; hostKey: string };
          inbound.set(
            peer,
            await Promise.all(
              Array.from({ length: options.lanes }, (_, lane) => dialPeer(where, { peer, lane }, options)),
            ),
          );
          if (failed) dropAll(); // a dial that completed after the rendezvous had already failed
          return where.hostKey;
        }),
      ),
    ]);
  } catch (err) {
    failed = true;
    dropAll();
    throw err;
  } finally {
    server.close();
  }
  return { outbound, inbound, hostKeys };
}

/** Accepts the connections of every peer, lane by lane; anything else is refused and logged. */
function acceptPeers(server: Server, options: MeshOptions, sockets: Map<number, Connection[]>): Promise<void> {
  const { rank, nranks, lanes } = options;
  const expected = nranks - 1;
  const complete = (r: number) => (sockets.get(r)?.filter(Boolean).length ?? 0) === lanes;
  return new Promise<void>((resolve, reject) => {
    if (expected === 0) return resolve();
    const timer = setTimeout(
      () =>
        reject(
          new TscclError(
            ErrorCode.TIMEOUT,
            `Rank ${rank} timed out after ${options.timeoutMs} ms waiting for ${rankList(Array.from({ length: nranks }, (_, r) => r).filter((r) => r !== rank && !complete(r)))} to connect`,
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
    server.on('connection', (socket) => {
      socket.setNoDelay(true);
      socket.on('error', () => {});
      const refuse = (why: string) => {
        log('WARN', () => `rank ${rank} refused a connection from ${socket.remoteAddress}: ${why}`);
        socket.destroy();
      };
      checkHello(socket, options).then(
        ({ peer, lane, intake }) => {
          if (peer === rank || peer >= nranks || lane >= lanes || sockets.get(peer)?.[lane] !== undefined)
            return refuse(`unexpected rank ${peer} socket ${lane}`);
          acceptHello(socket);
          let peerLanes = sockets.get(peer);
          if (peerLanes === undefined) sockets.set(peer, (peerLanes = new Array<Connection>(lanes)));
          peerLanes[lane] = { socket, intake };
          if ([...sockets.keys()].filter(complete).length === expected) {
            clearTimeout(timer);
            resolve();
          }
        },
        (err: Error) => refuse(err.message),
      );
    });
  });
}

/** Dials one lane to a peer and says hello; the socket reads into the mesh's read buffer. */
async function dialPeer(
  where: { host: string; port: number },
  to: { peer: number; lane: number },
  options: MeshOptions,
): Promise<Connection> {
  const { host, port } = where;
  const { rank } = options;
  const intake = new Intake();
  const socket = connect({ host, port, ...readInto(options.readBuffer, intake) });
  socket.setNoDelay(true);
  await new Promise<void>((resolve, reject) => {
    socket.once('connect', resolve);
    socket.once('error', (err) =>
      reject(
        new TscclError(
          ErrorCode.PEER_LOST,
          `Rank ${rank} cannot connect to rank ${to.peer} at ${host}:${port}: ${err.message}`,
          { rank, peer: to.peer },
        ),
      ),
    );
  });
  await sayHello(socket, intake, { ...to, where: `${host}:${port}` }, options);
  return { socket, intake };
}
