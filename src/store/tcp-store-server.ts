import { type AddressInfo, type Server, type Socket, createServer } from 'node:net';
import { TscclError } from '../errors.js';
import { log } from '../log.js';
import { NO_TOKEN_MAC, checkProof, isLoopbackAddress, newNonce } from '../security/job-token.js';
import { MemoryStore } from './memory-store.js';
import {
  FrameDecoder,
  Op,
  type Request,
  Status,
  type StatusCode,
  decodeRequest,
  encodeGreeting,
  encodeResponse,
} from './tcp-store-protocol.js';

export interface TcpStoreServerOptions {
  host?: string;
  /** 0 picks a free port. */
  port?: number;
  /** The job token clients must prove; without one, only loopback clients are served unless allowInsecureRemote. */
  token?: string;
  allowInsecureRemote?: boolean;
  /** Connections served at once; more are refused (default 1024). */
  maxConnections?: number;
}

export const STORE_PURPOSE = 'tsccl-store';

/**
 * Serves a MemoryStore over TCP (see tcp-store-protocol.ts). Embedded in the launcher or in rank
 * 0. A client that fails authentication or breaks the protocol is logged and disconnected;
 * everyone else is served as before.
 */
export class TcpStoreServer {
  private readonly server: Server;
  private readonly store = new MemoryStore();
  private readonly sockets = new Set<Socket>();
  private readonly options: TcpStoreServerOptions;
  /** Connections refused for authentication or protocol errors (for tests and logs). */
  refused = 0;
  private unreferenced = false;

  private constructor(options: TcpStoreServerOptions) {
    this.options = options;
    this.server = createServer((socket) => this.serve(socket));
    this.server.maxConnections = options.maxConnections ?? 1024;
  }

  static async listen(options: TcpStoreServerOptions = {}): Promise<TcpStoreServer> {
    const server = new TcpStoreServer(options);
    await new Promise<void>((resolve, reject) => {
      server.server.once('error', reject);
      server.server.listen(options.port ?? 0, options.host ?? '127.0.0.1', () => {
        server.server.off('error', reject);
        resolve();
      });
    });
    return server;
  }

  /**
   * Lets the process exit while the server still listens (rank 0 serves the job's store as long
   * as it lives, but must not be kept alive by it).
   */
  unref(): void {
    this.unreferenced = true;
    this.server.unref();
    for (const s of this.sockets) s.unref();
  }

  get port(): number {
    return (this.server.address() as AddressInfo).port;
  }

  async close(): Promise<void> {
    for (const s of this.sockets) s.destroy();
    await this.store.close();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }

  private serve(socket: Socket): void {
    this.sockets.add(socket);
    socket.setNoDelay(true);
    if (this.unreferenced) socket.unref();
    const token = this.options.token;
    const remote = socket.remoteAddress;
    if (token === undefined && !this.options.allowInsecureRemote && !isLoopbackAddress(remote)) {
      this.refuse(
        socket,
        `store refused ${remote}: the job has no token, so only loopback clients are served (set TSCCL_JOB_TOKEN)`,
      );
      return;
    }
    const nonce = newNonce();
    let authenticated = false;
    const decoder = new FrameDecoder();
    socket.write(encodeGreeting(token !== undefined, nonce));
    socket.on('data', (chunk) => {
      try {
        for (const body of decoder.push(chunk)) {
          const request = decodeRequest(body);
          if (!authenticated) {
            const mac = request.op === Op.AUTH ? request.mac : undefined;
            const ok =
              mac !== undefined &&
              (token === undefined
                ? Buffer.from(mac).equals(NO_TOKEN_MAC)
                : checkProof(token, STORE_PURPOSE, nonce, mac));
            if (!ok) {
              socket.end(
                encodeResponse(
                  request.op === Op.AUTH ? Status.AUTH_FAILED : Status.NOT_AUTHENTICATED,
                  request.id,
                  (w) => w.string('authentication failed'),
                ),
              );
              this.refuse(
                socket,
                `store refused ${remote}: ${request.op === Op.AUTH ? 'wrong job token' : 'no authentication'}`,
              );
              return;
            }
            authenticated = true;
            socket.write(encodeResponse(Status.OK, request.id));
            continue;
          }
          void this.answer(socket, request);
        }
      } catch (err) {
        socket.end(encodeResponse(Status.INVALID, 0, (w) => w.string((err as Error).message)));
        this.refuse(socket, `store dropped ${remote}: ${(err as Error).message}`);
      }
    });
    socket.on('error', () => socket.destroy());
    socket.on('close', () => this.sockets.delete(socket));
  }

  private refuse(socket: Socket, reason: string): void {
    this.refused++;
    log('WARN', () => reason);
    socket.destroySoon();
  }

  private async answer(socket: Socket, request: Request): Promise<void> {
    const reply = (status: StatusCode, fill?: Parameters<typeof encodeResponse>[2]) => {
      if (!socket.destroyed) socket.write(encodeResponse(status, request.id, fill));
    };
    try {
      switch (request.op) {
        case Op.AUTH:
          return reply(Status.OK);
        case Op.SET:
          await this.store.set(request.key, request.value);
          return reply(Status.OK);
        case Op.GET: {
          const v = await this.store.get(request.key, { timeoutMs: request.timeoutMs });
          return reply(Status.OK, (w) => w.bytes(v));
        }
        case Op.WAIT:
          await this.store.wait(request.keys, { timeoutMs: request.timeoutMs });
          return reply(Status.OK);
        case Op.ADD: {
          const v = await this.store.add(request.key, request.delta);
          return reply(Status.OK, (w) => w.f64(v));
        }
        case Op.COMPARE_SET: {
          const v = await this.store.compareSet(request.key, request.expected, request.desired);
          return reply(Status.OK, (w) => w.bytes(v));
        }
        case Op.DELETE: {
          const existed = await this.store.delete(request.key);
          return reply(Status.OK, (w) => w.u8(existed ? 1 : 0));
        }
      }
    } catch (err) {
      const timeout = err instanceof TscclError && err.code === 'TSCCL_ERR_TIMEOUT';
      reply(timeout ? Status.TIMEOUT : Status.INVALID, (w) => w.string((err as Error).message));
    }
  }
}
