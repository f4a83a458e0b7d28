import type { Schedule, Slice, Step } from '../algorithms/schedule.js';
import type { DTypeInfo, TypedArray } from '../dtypes/dtype.js';
import type { ReduceKernel } from '../kernels/reduce-kernel.js';
import type { MessageTag, SendHandle, Transport, WaitContext } from '../transport/transport.js';

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
  readonly start: number;
  readonly end: number;
}

/**
 * Runs one rank's schedule. Channels run concurrently, steps in order. Sends are posted without
 * waiting; a step that would overwrite bytes a posted send still covers first waits until the
 * peer has consumed them (the rule the verifier proves schedules against). The call ends when
 * every send has been consumed, so the caller may reuse all buffers.
 */
export async function executeSchedule(request: ExecRequest): Promise<void> {
  const posted: PostedSend[] = [];
  await Promise.all(request.schedule.channels.map((steps, ch) => runChannel(request, steps, request.channelBase + ch, posted)));
  for (const send of posted) {
    if (!request.transport.isDelivered(send.handle)) await request.transport.waitDelivered(send.handle, request.ctx);
  }
}

async function runChannel(request: ExecRequest, steps: readonly Step[], channel: number, posted: PostedSend[]): Promise<void> {
  const { buffers, dtype, kernel, transport, tag, ctx } = request;
  const view = (s: Slice): TypedArray => buffers[s.buf].subarray(s.offset, s.offset + s.count) as TypedArray;
  const bytesOf = (v: TypedArray) => new Uint8Array(v.buffer, v.byteOffset, v.byteLength);

  const beforeWrite = async (v: TypedArray): Promise<void> => {
    const start = v.byteOffset;
    const end = start + v.byteLength;
    for (let i = 0; i < posted.length; i++) {
      const send = posted[i];
      if (start < send.end && send.start < end && !transport.isDelivered(send.handle)) {
        await transport.waitDelivered(send.handle, ctx);
      }
    }
  };

  for (const step of steps) {
    switch (step.kind) {
      case 'send': {
        const src = view(step.src);
        const handle = await transport.send(step.peer, channel, bytesOf(src), tag, ctx);
        if (src.byteLength > 0) posted.push({ handle, start: src.byteOffset, end: src.byteOffset + src.byteLength });
        else posted.push({ handle, start: 0, end: 0 });
        break;
      }
      case 'recv': {
        const dst = view(step.dst);
        await beforeWrite(dst);
        const dstBytes = bytesOf(dst);
        await transport.recv(step.peer, channel, dst.byteLength, dtype.bytes, tag, (piece, offset) => dstBytes.set(piece, offset), ctx);
        break;
      }
      case 'recvReduce': {
        const dst = view(step.dst);
        const src = view(step.src);
        await beforeWrite(dst);
        await transport.recv(step.peer, channel, dst.byteLength, dtype.bytes, tag, (piece, offset) => {
          const first = offset / dtype.bytes;
          const count = piece.byteLength / dtype.bytes;
          const incoming = new dtype.ctor(piece.buffer, piece.byteOffset, count);
          kernel(dst.subarray(first, first + count) as TypedArray, src.subarray(first, first + count) as TypedArray, incoming);
        }, ctx);
        break;
      }
      case 'copy': {
        const src = view(step.src);
        const dst = view(step.dst);
        if (src.byteOffset === dst.byteOffset && src.buffer === dst.buffer) break;
        await beforeWrite(dst);
        dst.set(src as never);
        break;
      }
      case 'reduce': {
        const dst = view(step.dst);
        await beforeWrite(dst);
        const [first, ...rest] = step.srcs.map(view);
        if (rest.length === 0) dst.set(first as never);
        for (const other of rest) kernel(dst, rest[0] === other ? first : dst, other);
        break;
      }
    }
  }
}
