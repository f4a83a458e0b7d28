import type { OnReadOpts, Socket } from 'node:net';
import { socketCalls } from './socket-calls.js';
import { socketFd } from './socket-syscall.js';

/**
 * Where the bytes a socket reads go. A rank's sockets read through `onread` (an accepted one
 * once its handshake is done, accepted-socket.ts): libuv fills one reused buffer and the handler
 * must take the bytes before returning (no Buffer per read, which made reads a tenth of a TCP
 * all-reduce's time in garbage collection and halved a raw loopback exchange's speed). Bytes that come while nobody listens (the peer's first frame
 * right behind the handshake) are copied and kept for the next handler, in order (copied with
 * the typed-array constructor: a Buffer's slice would be a view of memory the next read reuses).
 */
export class Intake {
  private handler: ((bytes: Uint8Array) => void) | undefined;
  private early: Uint8Array[] = [];
  /** Where the socket's next read goes, when not into its usual buffer (see readInto). */
  placement: (() => Uint8Array | undefined) | undefined;
  /** The memory Node holds for the socket's next read: it asks for it right after the read before (see readInto). */
  nextRead: Uint8Array | undefined;
  /** The view of read memory the last read was fed as, reused while reads fill the same bytes. */
  private lastRead: Uint8Array | undefined;

  get attached(): boolean {
    return this.handler !== undefined;
  }

  feed(bytes: Uint8Array): void {
    if (this.handler !== undefined) this.handler(bytes);
    else this.early.push(new Uint8Array(bytes));
  }

  /**
   * feed of the first `n` bytes of `memory`, just read into it: as the view the read before was
   * fed as where that covers the same bytes (a small call's reads repeat one length). Nothing
   * keeps a fed view past its handler's return (see readInto), so one object serves every read.
   */
  feedRead(memory: Uint8Array, n: number): void {
    let view = this.lastRead;
    if (
      view === undefined ||
      view.byteLength !== n ||
      view.buffer !== memory.buffer ||
      view.byteOffset !== memory.byteOffset
    ) {
      view = memory.subarray(0, n);
      this.lastRead = view;
    }
    this.feed(view);
  }

  /** Routes every later byte (and those kept so far, first) to `handler`. */
  attach(handler: (bytes: Uint8Array) => void): void {
    this.handler = handler;
    while (this.early.length > 0 && this.handler === handler) handler(this.early.shift()!);
  }

  /** Moves the bytes kept so far to `next`, in front of any it keeps (the socket changes hands). */
  handOver(next: Intake): void {
    next.early.unshift(...this.early);
    this.early = [];
  }

  /** Stops routing; later bytes are kept. `rest` goes back in front of them. */
  detach(rest?: Uint8Array): void {
    this.handler = undefined;
    if (rest !== undefined && rest.byteLength > 0) this.early.unshift(new Uint8Array(rest));
  }
}

/**
 * The socket options that make a dialed socket read into `buffer` and hand the bytes to
 * `intake`. The intake's placement may name other memory for each read instead. Node asks for
 * a read's memory right after the read before it, not when the bytes come: other sockets read
 * (and other code runs) in between, so nothing may be left in shared memory for a later read.
 */
export function readInto(buffer: Uint8Array, intake: Intake): { onread: OnReadOpts } {
  return {
    onread: {
      buffer: () => (intake.nextRead = intake.placement?.() ?? buffer),
      callback: (n, buf) => {
        intake.feedRead(buf, n);
        return true;
      },
    },
  };
}

/**
 * Reads what a socket of readInto holds right now, synchronously, into `buffer` (its usual
 * memory), and feeds it to the intake; the bytes read (0: none waiting), or undefined if the
 * socket may not be read so now. An event-loop turn costs a waiting receiver more than this read. Only
 * while Node's memory for the socket's next read is `buffer` too: had it named a receiver's
 * memory, Node's next read would land there after the bytes this one took. Errors and the end
 * of the stream are left for Node's own next read to see.
 */
export function readNow(socket: Socket, buffer: Uint8Array, intake: Intake): number | undefined {
  const fd = socketFd(socket);
  if (fd === undefined || !intake.attached || socket.destroyed || socket.isPaused() || !within(intake.nextRead, buffer))
    return undefined;
  const n = socketCalls().read(fd, buffer);
  if (n > 0) intake.feedRead(buffer, n);
  return n;
}

/** An intake fed by 'data' events: an accepted socket during its handshake (Node's server cannot read into a given buffer). */
export function intakeOf(socket: Socket): Intake {
  const intake = new Intake();
  socket.on('data', (chunk: Buffer) => intake.feed(chunk));
  return intake;
}

/** Reads exactly n bytes during a handshake; later bytes stay in the intake, and the socket is paused. */
export function readExactly(socket: Socket, intake: Intake, n: number, timeoutMs: number): Promise<Buffer> {
  return new Promise<Buffer>((resolve, reject) => {
    const got = Buffer.alloc(n);
    let filled = 0;
    const timer = setTimeout(() => finish(new Error(`handshake timed out after ${timeoutMs} ms`)), timeoutMs);
    const onClose = () => finish(new Error('connection closed during handshake'));
    function finish(err?: Error, rest?: Uint8Array) {
      clearTimeout(timer);
      intake.detach(rest);
      socket.off('close', onClose);
      socket.pause();
      if (err) reject(err);
      else resolve(got);
    }
    socket.on('close', onClose);
    intake.attach((bytes) => {
      const take = Math.min(n - filled, bytes.byteLength);
      got.set(bytes.subarray(0, take), filled);
      filled += take;
      if (filled === n) finish(undefined, bytes.subarray(take));
    });
    if (filled < n) socket.resume();
  });
}

/** Whether `part` lies inside `whole` (the same memory: an arena holds both read buffers and receivers' data). */
function within(part: Uint8Array | undefined, whole: Uint8Array): boolean {
  return (
    part !== undefined &&
    part.buffer === whole.buffer &&
    part.byteOffset >= whole.byteOffset &&
    part.byteOffset + part.byteLength <= whole.byteOffset + whole.byteLength
  );
}
