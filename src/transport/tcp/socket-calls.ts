import { readSync, writeSync } from 'node:fs';
import { createRequire } from 'node:module';
import { paramString } from '../../config/params.js';
import { log } from '../../log.js';
import { quietSyscall } from './socket-syscall.js';

/**
 * The synchronous reads and writes a rank makes on its sockets' descriptors (in-place reads while
 * it waits for a small message, small frames written at once). Both kinds return the bytes moved,
 * or 0 when none could move now, at the end of the stream, or on a failure, which the socket's own
 * next read or write through Node reports.
 *
 * 'ffi': recv(2) and send(2) called through koffi, which cost less than Node's calls around
 * them: `readSync` throws on a socket that holds nothing (EAGAIN) and builds that error each time
 * (figures in docs/tcp-transport.md).
 * 'node': node:fs's `readSync` and `writeSync`, where koffi cannot load (platforms other than
 * Linux, a libc that is not glibc) or where `TSCCL_SOCKET_CALLS=node` asks for them.
 */
export interface SocketCalls {
  readonly kind: 'ffi' | 'node';
  read(fd: number, buffer: Uint8Array): number;
  /** Writes `bytes`, or only its first `length` bytes where given (never more than it holds). */
  write(fd: number, bytes: Uint8Array, length?: number): number;
}

/** The calls this process uses (TSCCL_SOCKET_CALLS), chosen on first use. */
export function socketCalls(): SocketCalls {
  if (chosen === undefined) chosen = socketCallsFor(paramString('TSCCL_SOCKET_CALLS'));
  return chosen;
}

let chosen: SocketCalls | undefined;

/** The calls a TSCCL_SOCKET_CALLS value asks for: 'node', or 'ffi' where koffi loads and else 'node'. */
export function socketCallsFor(setting: string): SocketCalls {
  if (setting.toLowerCase() === 'node') return NODE_CALLS;
  const ffi = loadFfiCalls();
  if (ffi instanceof Error) {
    log(
      'INFO',
      () => `socket reads and writes go through node:fs: recv/send through koffi unavailable (${ffi.message})`,
    );
    return NODE_CALLS;
  }
  return ffi;
}

/** node:fs's calls, each failure (EAGAIN included) thrown without a stack trace and taken as 0. */
export const NODE_CALLS: SocketCalls = {
  kind: 'node',
  read: (fd, buffer) => quietSyscall(readAll, fd, buffer),
  write: (fd, bytes, length) =>
    quietSyscall(
      writeAll,
      fd,
      length === undefined || length >= bytes.byteLength ? bytes : bytes.subarray(0, Math.max(0, length)),
    ),
};

function readAll(fd: number, buffer: Uint8Array): number {
  return readSync(fd, buffer, 0, buffer.byteLength, null);
}

function writeAll(fd: number, bytes: Uint8Array): number {
  return writeSync(fd, bytes);
}

/** Linux's MSG_NOSIGNAL: a write to a socket the peer closed fails with EPIPE instead of raising SIGPIPE. */
const MSG_NOSIGNAL = 0x4000;

/** The most one call reads or writes: what the low 32 bits of its result hold exactly. */
const MAX_CALL_BYTES = 0x7fffffff;

type NativeCall = (fd: number, memory: Uint8Array, bytes: number, flags: number) => number;

/** recv(2) and send(2) from glibc; the sockets are non-blocking already (libuv opened them so). */
export function loadFfiCalls(): SocketCalls | Error {
  if (process.platform !== 'linux') return new Error(`platform ${process.platform}`);
  try {
    const koffi = createRequire(import.meta.url)('koffi') as {
      load(path: string): { func(signature: string): NativeCall };
    };
    const libc = koffi.load('libc.so.6');
    // Declared to return int, not ssize_t: koffi makes a small integer of an int at less cost
    // than a Number of a 64-bit value, and a call never moves more than MAX_CALL_BYTES.
    const recv = libc.func('int recv(int fd, void *buf, size_t len, int flags)');
    const send = libc.func('int send(int fd, const void *buf, size_t len, int flags)');
    return {
      kind: 'ffi',
      read(fd, buffer) {
        const n = recv(fd, buffer, Math.min(buffer.byteLength, MAX_CALL_BYTES), 0);
        return Math.max(n, 0);
      },
      write(fd, bytes, length = bytes.byteLength) {
        const n = send(fd, bytes, Math.max(0, Math.min(length, bytes.byteLength, MAX_CALL_BYTES)), MSG_NOSIGNAL);
        return Math.max(n, 0);
      },
    };
  } catch (err) {
    return err instanceof Error ? err : new Error(String(err));
  }
}
