import type { Socket } from 'node:net';

/** Not where the intrinsics are frozen (node --frozen-intrinsics): writing it would throw. */
const stackTraceLimitWritable = Object.getOwnPropertyDescriptor(Error, 'stackTraceLimit')?.writable === true;

/** Where a socket keeps its descriptor once read: the handle's `fd` is a getter into C++. */
const FD = Symbol('tsccl.fd');

/**
 * The socket's file descriptor, or undefined where it has none (destroyed, not connected yet, or
 * not a Unix socket). Read from the handle once and kept on the socket: a small call reads and
 * writes its sockets through it, and the handle's getter cost about as much as a clock read. A
 * destroyed socket's number may belong to another file soon, so it is never returned.
 */
export function socketFd(socket: Socket): number | undefined {
  if (socket.destroyed) return undefined;
  const kept = (socket as unknown as { [FD]?: number })[FD];
  if (kept !== undefined) return kept;
  const fd = (socket as unknown as { _handle?: { fd?: number } })._handle?.fd;
  if (fd === undefined || fd < 0) return undefined;
  (socket as unknown as { [FD]?: number })[FD] = fd;
  return fd;
}

/**
 * `call(fd, data)`, a synchronous read or write on a non-blocking socket: the bytes it moved, or
 * 0 if it threw (EAGAIN when nothing could move, or a failure the socket's own next read or write
 * reports). It throws without a stack trace, which would be most of its cost.
 */
export function quietSyscall<D>(call: (fd: number, data: D) => number, fd: number, data: D): number {
  const stackTraceLimit = Error.stackTraceLimit;
  if (stackTraceLimitWritable) Error.stackTraceLimit = 0;
  try {
    return call(fd, data);
  } catch {
    return 0;
  } finally {
    if (stackTraceLimitWritable) Error.stackTraceLimit = stackTraceLimit;
  }
}
