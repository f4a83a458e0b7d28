import { Socket } from 'node:net';
import { Intake, readInto } from './intake.js';
import type { Connection } from './peer-link.js';

/** The libuv handle under a Node socket: Node's own field, the one its server hands a new socket. */
interface WithHandle {
  _handle: { readStop(): number; fd?: number } | null;
}

/**
 * An accepted socket, after its handshake, re-made to read into `buffer` (readInto) as a dialed
 * one does: Node's server cannot give a socket `onread`, and a socket read through 'data' events
 * makes a Buffer per read and cannot read a frame in place. The connection's handle moves to a
 * new Socket made with `onread`; the old one is destroyed without it (nothing is closed). Bytes
 * the old one read already go first. Where the handle is not reachable the socket is kept as
 * it is, read through its 'data' events.
 */
export function readableInPlace(socket: Socket, intake: Intake, buffer: Uint8Array): Connection {
  const old = socket as unknown as WithHandle;
  const handle = old._handle;
  if (handle === null || handle === undefined || typeof handle.readStop !== 'function') return { socket, intake };
  socket.pause();
  handle.readStop();
  old._handle = null;
  socket.removeAllListeners('data');
  const fresh = new Intake();
  intake.handOver(fresh);
  while (socket.readableLength > 0) {
    const chunk = socket.read() as Buffer | null;
    if (chunk === null) break;
    fresh.feed(chunk);
  }
  socket.destroy();
  const adopted = new Socket({
    handle,
    readable: true,
    writable: true,
    ...readInto(buffer, fresh),
  } as ConstructorParameters<typeof Socket>[0]);
  adopted.pause(); // as a dialed socket after its handshake: the frame reader resumes it
  adopted.setNoDelay(true);
  adopted.on('error', () => {});
  return { socket: adopted, intake: fresh };
}
