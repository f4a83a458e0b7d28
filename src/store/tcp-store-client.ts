import { type Socket, connect } from 'node:net';
import { ErrorCode, TscclError } from '../errors.js';
import { NO_TOKEN_MAC, proveToken } from '../security/job-token.js';
import { type Store, type StoreCallOptions, checkKey, checkValue, storeTimeout } from './store.js';
import {
  FieldReader,
  FrameDecoder,
  GREETING_BYTES,
  Op,
  type Request,
  type Response,
  Status,
  decodeGreeting,
  decodeResponse,
  encodeRequest,
} from './tcp-store-protocol.js';
import { STORE_PURPOSE } from './tcp-store-server.js';

export interface TcpStoreClientOptions {
  host: string;
  port: number;
  token?: string;
  /** How long to keep trying to reach the server (it may start after the client). */
  connectTimeoutMs?: number;
  /** Default timeout of each call. */
  timeoutMs?: number;
}

const RETRY_MS = 50;

interface Pending {
  resolve: (response: Response) => void;
  reject: (err: TscclError) => void;
}

/**
 * A store client. Connecting retries until the server answers (ranks may start before it);
 * a lost connection fails the calls in flight and the next call connects again.
 */
export class TcpStoreClient implements Store {
  private readonly options: TcpStoreClientOptions;
  private socket: Socket | undefined;
  private connecting: Promise<Socket> | undefined;
  private readonly pending = new Map<number, Pending>();
  private nextId = 1;
  private closed = false;
  private unreferenced = false;

  private constructor(options: TcpStoreClientOptions) {
    this.options = options;
  }

  static async connect(options: TcpStoreClientOptions): Promise<TcpStoreClient> {
    const client = new TcpStoreClient(options);
    await client.connection();
    return client;
  }

  async set(key: string, value: Uint8Array, options: StoreCallOptions = {}): Promise<void> {
    await this.call({ op: Op.SET, id: 0, key: checkKey(key), value: checkValue(value) }, options, `set ${key}`);
  }

  async get(key: string, options: StoreCallOptions = {}): Promise<Uint8Array> {
    const timeoutMs = this.timeout(options);
    const response = await this.call({ op: Op.GET, id: 0, timeoutMs, key: checkKey(key) }, options, `get ${key}`);
    return Uint8Array.from(new FieldReader(response.fields).bytes());
  }

  async wait(keys: readonly string[], options: StoreCallOptions = {}): Promise<void> {
    const timeoutMs = this.timeout(options);
    await this.call(
      { op: Op.WAIT, id: 0, timeoutMs, keys: keys.map(checkKey) },
      options,
      `wait for ${keys.join(', ')}`,
    );
  }

  async add(key: string, delta: number, options: StoreCallOptions = {}): Promise<number> {
    const response = await this.call({ op: Op.ADD, id: 0, key: checkKey(key), delta }, options, `add ${key}`);
    return new FieldReader(response.fields).f64();
  }

  async compareSet(
    key: string,
    expected: Uint8Array,
    desired: Uint8Array,
    options: StoreCallOptions = {},
  ): Promise<Uint8Array> {
    const response = await this.call(
      {
        op: Op.COMPARE_SET,
        id: 0,
        key: checkKey(key),
        expected: checkValue(expected, 'expected'),
        desired: checkValue(desired, 'desired'),
      },
      options,
      `compareSet ${key}`,
    );
    return Uint8Array.from(new FieldReader(response.fields).bytes());
  }

  async delete(key: string, options: StoreCallOptions = {}): Promise<boolean> {
    const response = await this.call({ op: Op.DELETE, id: 0, key: checkKey(key) }, options, `delete ${key}`);
    return new FieldReader(response.fields).u8() === 1;
  }

  /** The connection does not keep the process alive (calls in flight still do, through their timers). */
  unref(): void {
    this.unreferenced = true;
    this.socket?.unref();
  }

  async close(): Promise<void> {
    this.closed = true;
    this.socket?.destroy();
    this.failAll(new TscclError(ErrorCode.ABORTED, 'Store client closed', { op: 'store' }));
  }

  private timeout(options: StoreCallOptions): number {
    return options.timeoutMs ?? this.options.timeoutMs ?? 300_000;
  }

  private async call(request: Request, options: StoreCallOptions, what: string): Promise<Response> {
    if (this.closed) throw new TscclError(ErrorCode.ABORTED, 'Store client closed', { op: 'store' });
    const timeoutMs = this.timeout(options);
    const socket = await this.connection();
    const id = this.nextId++;
    return new Promise<Response>((resolve, reject) => {
      // The server ends a GET or WAIT at its own deadline; this timer covers a server that is gone.
      const timer = setTimeout(() => done(undefined, storeTimeout(what, timeoutMs)), timeoutMs + 1000);
      const onAbort = () =>
        done(undefined, new TscclError(ErrorCode.ABORTED, `Store ${what} was aborted`, { op: 'store' }));
      const done = (response?: Response, err?: TscclError) => {
        clearTimeout(timer);
        this.pending.delete(id);
        options.signal?.removeEventListener('abort', onAbort);
        if (err !== undefined) return reject(err);
        if (response!.status === Status.OK) return resolve(response!);
        const reason = Buffer.from(new FieldReader(response!.fields).bytes()).toString();
        reject(
          response!.status === Status.TIMEOUT
            ? storeTimeout(what, timeoutMs)
            : new TscclError(ErrorCode.INVALID_ARGUMENT, `Store ${what} failed: ${reason}`, { op: 'store' }),
        );
      };
      if (options.signal?.aborted) return onAbort();
      options.signal?.addEventListener('abort', onAbort, { once: true });
      this.pending.set(id, { resolve: (r) => done(r), reject: (e) => done(undefined, e) });
      socket.write(encodeRequest({ ...request, id }));
    });
  }

  private connection(): Promise<Socket> {
    if (this.socket !== undefined && !this.socket.destroyed) return Promise.resolve(this.socket);
    this.connecting ??= this.open().finally(() => {
      this.connecting = undefined;
    });
    return this.connecting;
  }

  private async open(): Promise<Socket> {
    const { host, port } = this.options;
    const deadline = performance.now() + (this.options.connectTimeoutMs ?? 60_000);
    for (;;) {
      try {
        const socket = await this.handshake(host, port);
        if (this.unreferenced) socket.unref();
        this.socket = socket;
        return socket;
      } catch (err) {
        const refused = (err as NodeJS.ErrnoException).code === 'ECONNREFUSED';
        if (!refused || performance.now() > deadline) {
          if (err instanceof TscclError) throw err;
          throw new TscclError(
            ErrorCode.PEER_LOST,
            `Cannot reach the store at ${host}:${port}: ${(err as Error).message}`,
            { op: 'store' },
          );
        }
        await new Promise((r) => setTimeout(r, RETRY_MS));
      }
    }
  }

  /** Connects, reads the greeting, proves the job token and waits for the server's OK. */
  private handshake(host: string, port: number): Promise<Socket> {
    return new Promise<Socket>((resolve, reject) => {
      const socket = connect({ host, port });
      socket.setNoDelay(true);
      const decoder = new FrameDecoder();
      let greeting: Buffer | undefined = Buffer.alloc(0);
      const fail = (err: Error) => {
        socket.destroy();
        reject(err);
      };
      const closedEarly = () =>
        fail(
          new TscclError(
            ErrorCode.PEER_LOST,
            `The store at ${host}:${port} closed the connection before it was ready (connection limit, or not a tsccl store)`,
            { op: 'store' },
          ),
        );
      socket.once('error', fail);
      socket.once('close', closedEarly);
      socket.on('data', (chunk: Buffer) => {
        try {
          if (greeting !== undefined) {
            greeting = Buffer.concat([greeting, chunk]);
            if (greeting.byteLength < GREETING_BYTES) return;
            const { authRequired, nonce } = decodeGreeting(greeting.subarray(0, GREETING_BYTES));
            const rest = greeting.subarray(GREETING_BYTES);
            greeting = undefined;
            if (authRequired && this.options.token === undefined) {
              return fail(
                new TscclError(
                  ErrorCode.INVALID_ARGUMENT,
                  `The store at ${host}:${port} requires the job token: set TSCCL_JOB_TOKEN`,
                  { op: 'store' },
                ),
              );
            }
            const mac =
              this.options.token === undefined ? NO_TOKEN_MAC : proveToken(this.options.token, STORE_PURPOSE, nonce);
            socket.write(encodeRequest({ op: Op.AUTH, id: 0, mac }));
            chunk = rest;
          }
          for (const body of decoder.push(chunk)) {
            const response = decodeResponse(body);
            if (response.id === 0) {
              if (response.status !== Status.OK)
                return fail(
                  new TscclError(
                    ErrorCode.INVALID_ARGUMENT,
                    `The store at ${host}:${port} refused this client: wrong job token`,
                    { op: 'store' },
                  ),
                );
              socket.off('error', fail);
              socket.off('close', closedEarly);
              socket.on('error', () => socket.destroy());
              socket.on('close', () =>
                this.failAll(
                  new TscclError(ErrorCode.PEER_LOST, `Lost the connection to the store at ${host}:${port}`, {
                    op: 'store',
                  }),
                ),
              );
              resolve(socket);
              continue;
            }
            this.pending.get(response.id)?.resolve(response);
          }
        } catch (err) {
          fail(err as Error);
        }
      });
    });
  }

  private failAll(err: TscclError): void {
    for (const p of [...this.pending.values()]) p.reject(err);
  }
}
