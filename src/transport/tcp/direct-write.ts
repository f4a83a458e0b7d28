import { writevSync } from 'node:fs';
import type { Socket } from 'node:net';
import { socketCalls } from './socket-calls.js';
import { quietSyscall, socketFd } from './socket-syscall.js';
import { DIRECT_WRITE_MAX_BYTES } from './tcp-tunables.js';

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
  const fd = directFd(socket, total);
  if (fd === undefined) return 0;
  return pieces.length === 1 ? socketCalls().write(fd, pieces[0]) : quietSyscall(writeAll, fd, pieces);
}

/** writeNow of the first `length` bytes of `memory`, with no view made of them. */
export function writeStartNow(socket: Socket, memory: Uint8Array, length: number): number {
  const fd = directFd(socket, length);
  return fd === undefined ? 0 : socketCalls().write(fd, memory, length);
}

/** The socket's descriptor, if `total` bytes may be written on it at once (see writeNow). */
function directFd(socket: Socket, total: number): number | undefined {
  if (total > DIRECT_WRITE_MAX_BYTES || socket.writableLength > 0 || socket.destroyed || socket.connecting)
    return undefined;
  return socketFd(socket);
}

function writeAll(fd: number, pieces: readonly Uint8Array[]): number {
  return writevSync(fd, pieces as Uint8Array[]);
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
