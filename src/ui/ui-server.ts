import { existsSync, readFileSync, statSync } from 'node:fs';
import { type IncomingMessage, type Server, type ServerResponse, createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { extname, resolve, sep } from 'node:path';
import { fileURLToPath } from 'node:url';
import { ErrorCode, TscclError } from '../errors.js';
import { log } from '../log.js';
import { type UiContext, answerApi } from './ui-api.js';

/** The built page, shipped in the package (vite builds ui/ into dist/ui). */
export const PAGE_DIR = fileURLToPath(new URL('../../ui/', import.meta.url));

const CONTENT_TYPES: Record<string, string> = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.svg': 'image/svg+xml',
  '.png': 'image/png',
  '.json': 'application/json',
};

export interface UiServerOptions {
  /** 0: a free port. */
  readonly port: number;
  /** Accept connections from other machines (listens on every interface); otherwise loopback only. */
  readonly allowRemote: boolean;
  readonly context: UiContext;
  readonly pageDir?: string;
}

export interface UiServer {
  readonly url: string;
  close(): Promise<void>;
}

/** Whether a peer address is this machine's loopback (IPv4 127/8, IPv6 ::1, or IPv4 mapped in IPv6). */
export function isLoopback(address: string | undefined): boolean {
  if (address === undefined) return false;
  const v4 = address.startsWith('::ffff:') ? address.slice(7) : address;
  return v4.startsWith('127.') || address === '::1';
}

/**
 * Serves the page and its API on node:http: files of the built page only (a path that resolves
 * outside it is 404), API answers as JSON, refusals as JSON with their TscclError code (400).
 * Other machines are refused (403) unless allowed.
 */
export async function startUiServer(options: UiServerOptions): Promise<UiServer> {
  const pageDir = resolve(options.pageDir ?? PAGE_DIR);
  if (!existsSync(resolve(pageDir, 'index.html')))
    throw new TscclError(ErrorCode.UNAVAILABLE, `the page is not built (${pageDir}): run npm run build`);
  const answers = new Map<string, string>();
  const server: Server = createServer((req, res) => {
    try {
      handle(req, res, pageDir, options, answers);
    } catch (err) {
      sendError(res, err);
    }
  });
  const host = options.allowRemote ? '::' : '127.0.0.1';
  await new Promise<void>((done, fail) => {
    server.once('error', (err: NodeJS.ErrnoException) =>
      fail(
        new TscclError(
          ErrorCode.INVALID_ARGUMENT,
          err.code === 'EADDRINUSE'
            ? `port ${options.port} is in use: choose another with --port, or leave it out for a free one`
            : `cannot serve on ${host} port ${options.port}: ${err.message}`,
          { argument: '--port' },
        ),
      ),
    );
    server.listen(options.port, host, () => done());
  });
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/`,
    close: () =>
      new Promise<void>((done) => {
        server.closeAllConnections();
        server.close(() => done());
      }),
  };
}

function handle(
  req: IncomingMessage,
  res: ServerResponse,
  pageDir: string,
  options: UiServerOptions,
  answers: Map<string, string>,
): void {
  if (!options.allowRemote && !isLoopback(req.socket.remoteAddress)) {
    send(res, 403, 'text/plain; charset=utf-8', 'tsccl ui serves this machine only (start it with --allow-remote)');
    return;
  }
  if (req.method !== 'GET' && req.method !== 'HEAD') {
    send(res, 405, 'text/plain; charset=utf-8', 'GET only');
    return;
  }
  const url = new URL(req.url ?? '/', 'http://localhost');
  if (url.pathname.startsWith('/api/')) {
    const key = `${url.pathname.slice(1)}${url.search}`;
    let body = answers.get(key);
    if (body === undefined) {
      const started = performance.now();
      body = JSON.stringify(answerApi(key, options.context));
      log('INFO', () => `tsccl ui: ${key} answered in ${(performance.now() - started).toFixed(0)} ms`);
      // Simulations are deterministic: a page that comes back to a view gets the same answer at once.
      if (!key.startsWith('api/job')) answers.set(key, body);
    }
    send(res, 200, CONTENT_TYPES['.json'], body);
    return;
  }
  let path: string;
  try {
    path = decodeURIComponent(url.pathname);
  } catch {
    send(res, 400, 'text/plain; charset=utf-8', 'bad path');
    return;
  }
  const file = resolve(pageDir, `.${path === '/' ? '/index.html' : path}`);
  if (!file.startsWith(pageDir + sep) || !existsSync(file) || !statSync(file).isFile()) {
    send(res, 404, 'text/plain; charset=utf-8', 'not found');
    return;
  }
  send(res, 200, CONTENT_TYPES[extname(file)] ?? 'application/octet-stream', readFileSync(file));
}

function send(res: ServerResponse, status: number, type: string, body: string | Buffer): void {
  res.writeHead(status, { 'content-type': type, 'cache-control': 'no-store', 'x-content-type-options': 'nosniff' });
  res.end(res.req.method === 'HEAD' ? undefined : body);
}

function sendError(res: ServerResponse, err: unknown): void {
  const known = err instanceof TscclError;
  const error = known
    ? { code: err.code, message: err.message, argument: err.details.argument ?? null }
    : { code: ErrorCode.INTERNAL, message: (err as Error).message, argument: null };
  send(
    res,
    known && err.code === ErrorCode.INVALID_ARGUMENT ? 400 : 500,
    CONTENT_TYPES['.json'],
    JSON.stringify({ error }),
  );
}
