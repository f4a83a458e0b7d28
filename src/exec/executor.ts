import type { Schedule, Slice, Step } from '../algorithms/schedule.js';
import type { DTypeInfo, TypedArray } from '../dtypes/dtype.js';
import type { ReduceKernel } from '../kernels/reduce-kernel.js';
import { type Consume, type MessageTag, type SendHandle, type Transport, type WaitContext, copyInto } from '../transport/transport.js';
import { spinUntil } from '../transport/wait.js';

/** Arena views, in the call's dtype, that a schedule's slices refer to. */
export interface ExecBuffers {
  readonly input: TypedArray;
  readonly output: TypedArray;
  readonly scratch: TypedArray;
}

export interface ExecRequest {
  readonly schedule: Schedule;
  readonly buffers: ExecBuffers;
  readonly dtype: DTypeInfo;
  readonly kernel: ReduceKernel;
  readonly transport: Transport;
  readonly tag: MessageTag;
  readonly ctx: WaitContext;
  /** Channel numbers of the schedule's channels on the transport start here. */
  readonly channelBase: number;
}

interface PostedSend {
  readonly handle: SendHandle;
  readonly buffer: ArrayBufferLike;
  readonly start: number;
  readonly end: number;
}

/**
 * Runs one rank's schedule. Channels run concurrently, steps in order. Sends are posted without
 * waiting; a step that would overwrite bytes a posted send still covers first waits until the
 * peer has consumed them (the rule the verifier proves schedules against). The call ends when
 * every send has been consumed, so the caller may reuse all buffers.
 *
 * Fast path: while the transport can serve a step at once (shared memory, after a spin of
 * ctx.spinMs), steps run synchronously, with no promise per step; a step that must wait longer
 * falls back to the asynchronous path. Small calls between ranks that keep up never await.
 */
export async function executeSchedule(request: ExecRequest): Promise<void> {
  const posted: PostedSend[] = [];
  const channels = request.schedule.channels;
  if (channels.length === 1) await runChannel(request, channels[0], request.channelBase, posted);
  else await Promise.all(channels.map((steps, ch) => runChannel(request, steps, request.channelBase + ch, posted)));
  const { transport, ctx } = request;
  for (const send of posted) {
    if (!spinUntil(() => transport.isDelivered(send.handle), ctx.spinMs)) await transport.waitDelivered(send.handle, ctx);
  }
}

async function runChannel(request: ExecRequest, steps: readonly Step[], channel: number, posted: PostedSend[]): Promise<void> {
  const { buffers, dtype, kernel, transport, tag, ctx } = request;
  const view = (s: Slice): TypedArray => buffers[s.buf].subarray(s.offset, s.offset + s.count) as TypedArray;
  const bytesOf = (v: TypedArray) => new Uint8Array(v.buffer, v.byteOffset, v.byteLength);
  const post = (handle: SendHandle, src: TypedArray) => posted.push({ handle, buffer: src.buffer, start: src.byteOffset, end: src.byteOffset + src.byteLength });

  /**
   * Offsets compare within one memory: the same buffer, or any two shared buffers (the arena's
   * memory gets a new buffer object when it grows). A user's plain input and output arrays (over
   * TCP nothing is staged) never overlap, though both start at offset 0.
   */
  const sameMemory = (a: ArrayBufferLike, b: ArrayBufferLike) => a === b || (a instanceof SharedArrayBuffer && b instanceof SharedArrayBuffer);
  const overlaps = (s: PostedSend, v: TypedArray) => sameMemory(s.buffer, v.buffer) && v.byteOffset < s.end && s.start < v.byteOffset + v.byteLength;
  /** Posted sends whose bytes overlap [v) and that the peer has not consumed yet. */
  const pendingOver = (v: TypedArray): PostedSend[] => posted.filter((s) => overlaps(s, v) && !transport.isDelivered(s.handle));
  /** The same question without building a list: asked on every spin of the fast path. */
  const isFree = (v: TypedArray): boolean => !posted.some((s) => overlaps(s, v) && !transport.isDelivered(s.handle));
  const consumer = (step: Step): Consume => {
    if (step.kind === 'recv') return copyInto(bytesOf(view(step.dst)));
    const dst = view((step as { dst: Slice }).dst);
    const src = view((step as { src: Slice }).src);
    return (piece, offset) => {
      const first = offset / dtype.bytes;
      const count = piece.byteLength / dtype.bytes;
      const incoming = new dtype.ctor(piece.buffer, piece.byteOffset, count);
      kernel(dst.subarray(first, first + count) as TypedArray, src.subarray(first, first + count) as TypedArray, incoming);
    };
  };
  const local = (step: Step) => {
    if (step.kind === 'copy') {
      const src = view(step.src);
      const dst = view(step.dst);
      if (!(src.byteOffset === dst.byteOffset && src.buffer === dst.buffer)) dst.set(src as never);
    } else if (step.kind === 'reduce') {
      const dst = view(step.dst);
      const [first, ...rest] = step.srcs.map(view);
      if (rest.length === 0) dst.set(first as never);
      for (const other of rest) kernel(dst, rest[0] === other ? first : dst, other);
    }
  };
  /** A plain receive copies bytes and takes pieces of any length and address; a reduction views whole elements. */
  const pieceAlignment = (step: Step) => (step.kind === 'recv' ? 1 : dtype.bytes);
  const written = (step: Step): TypedArray | undefined => (step.kind === 'send' ? undefined : view(step.dst));

  /** One step without waiting; false if it would have to wait. */
  const trySync = (step: Step): boolean => {
    const dst = written(step);
    if (dst !== undefined && !spinUntil(() => isFree(dst), ctx.spinMs)) return false;
    switch (step.kind) {
      case 'send': {
        if (transport.trySend === undefined) return false;
        const src = view(step.src);
        const data = bytesOf(src);
        let handle: SendHandle | undefined;
        if (!spinUntil(() => (handle = transport.trySend!(step.peer, channel, data, tag)) !== undefined, ctx.spinMs)) return false;
        post(handle!, src);
        return true;
      }
      case 'recv':
      case 'recvReduce': {
        if (transport.tryRecv === undefined) return false;
        const consume = consumer(step);
        const alignment = pieceAlignment(step);
        return spinUntil(() => transport.tryRecv!(step.peer, channel, dst!.byteLength, alignment, tag, consume), ctx.spinMs);
      }
      default:
        local(step);
        return true;
    }
  };

  /** One step, waiting as long as it takes (within the context's deadline). */
  const runAsync = async (step: Step): Promise<void> => {
    const dst = written(step);
    if (dst !== undefined) for (const send of pendingOver(dst)) await transport.waitDelivered(send.handle, ctx);
    switch (step.kind) {
      case 'send': {
        const src = view(step.src);
        post(await transport.send(step.peer, channel, bytesOf(src), tag, ctx), src);
        break;
      }
      case 'recv':
      case 'recvReduce':
        await transport.recv(step.peer, channel, dst!.byteLength, pieceAlignment(step), tag, consumer(step), ctx);
        break;
      default:
        local(step);
    }
  };

  for (const step of steps) {
    if (!trySync(step)) await runAsync(step);
  }
}
