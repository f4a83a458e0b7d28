import { writeSync, writevSync } from 'node:fs';
import type { Socket } from 'node:net';
import { DIRECT_WRITE_MAX_BYTES } from './tcp-tunables.js';

/** Not where the intrinsics are frozen (node --frozen-intrinsics): writing it would throw. */
const stackTraceLimitWritable = Object.getOwnPropertyDescriptor(Error, 'stackTraceLimit')?.writable === true;

/**
 * Writes `pieces` into the socket's kernel buffer at once, from this call, when the socket holds
 * nothing queued and they are at most DIRECT_WRITE_MAX_BYTES: the bytes written (0 when it may
 * not, or the kernel took none). Node's stream would make the same system call, but only after
 * its own bookkeeping, and would report the write done a tick later, so a small schedule's send
 * waited for the event loop. With nothing queued, bytes written here keep their place in the
 * stream's order; whatever is left goes through the socket after them. A failed write (the peer
 * went away) writes nothing, and the socket's own write then reports the failure as before.
 */
export function writeNow(socket: Socket, pieces: readonly Uint8Array[], total: number): number {
  if (total > DIRECT_WRITE_MAX_BYTES || socket.writableLength > 0 || socket.destroyed || socket.connecting) return 0;
  const fd = (socket as unknown as { _handle?: { fd?: number } })._handle?.fd;
  if (fd === undefined || fd < 0) return 0;
  const stackTraceLimit = Error.stackTraceLimit;
  // A full socket buffer throws EAGAIN, and a stack trace would be most of that cost.
  if (stackTraceLimitWritable) Error.stackTraceLimit = 0;
  try {
    return pieces.length === 1 ? writeSync(fd, pieces[0]) : writevSync(fd, pieces as Uint8Array[]);
  } catch {
    return 0;
  } finally {
    if (stackTraceLimitWritable) Error.stackTraceLimit = stackTraceLimit;
  }
}

/** What of `pieces` is left after the first `written` bytes: copies if the pieces' memory is reused once the call returns. */
export function unwritten(pieces: readonly Uint8Array[], written: number, copy: boolean): Uint8Array[] {
  const rest: Uint8Array[] = [];
  let skip = written;
  for (const piece of pieces) {
    if (skip >= piece.byteLength) {
      skip -= piece.byteLength;
      continue;
    }
    const part = skip > 0 ? piece.subarray(skip) : piece;
    rest.push(copy ? Buffer.from(part) : part);
    skip = 0;
  }
  return rest;
}
