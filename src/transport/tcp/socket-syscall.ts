import type { Socket } from 'node:net';

/** Not where the intrinsics are frozen (node --frozen-intrinsics): writing it would throw. */
const stackTraceLimitWritable = Object.getOwnPropertyDescriptor(Error, 'stackTraceLimit')?.writable === true;

/** The socket's file descriptor, or undefined where it has none (closed, or not a Unix socket). */
export function socketFd(socket: Socket): number | undefined {
  const fd = (socket as unknown as { _handle?: { fd?: number } })._handle?.fd;
  return fd === undefined || fd < 0 ? undefined : fd;
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
