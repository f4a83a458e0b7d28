import type { Schedule, Slice, Step } from '../algorithms/schedule.js';
import type { DTypeInfo, TypedArray } from '../dtypes/dtype.js';
import { ErrorCode, TscclError } from '../errors.js';
import type { ReduceKernel } from '../kernels/reduce-kernel.js';
import {
  type Consume,
  type MessageTag,
  type SendHandle,
  type Transport,
  type WaitContext,
  combineInto,
  copyInto,
} from '../transport/transport.js';
import { COLLECTIVE_CHANNELS } from '../transport/channels.js';
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
 * Runs one rank's schedule. Channels run concurrently, steps in order (a run of plain receives
 * from different peers may wait together where the transport allows, see recvRun). Sends are posted without
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
  if (request.channelBase + channels.length > COLLECTIVE_CHANNELS) throw channelOverflow(request);
  if (channels.length === 1) await new ChannelRun(request, request.channelBase, posted).run(channels[0]);
  else
    await Promise.all(
      channels.map((steps, ch) => new ChannelRun(request, request.channelBase + ch, posted).run(steps)),
    );
  const { transport, ctx } = request;
  for (const send of posted) {
    if (!spinUntil(() => transport.isDelivered(send.handle), ctx)) await transport.waitDelivered(send.handle, ctx);
  }
}

function channelOverflow({ schedule, channelBase }: ExecRequest): TscclError {
  return new TscclError(
    ErrorCode.INTERNAL,
    `Schedule ${schedule.algorithm} of ${schedule.collective} needs channels ${channelBase}..${channelBase + schedule.channels.length - 1}, ` +
      `but collectives own only ${COLLECTIVE_CHANNELS} (see transport/channels.ts): it would share point-to-point's queue`,
    { rank: schedule.rank, op: schedule.collective },
  );
}

/** Posted sends past this many are pruned of the consumed ones before a scan (see recentPosts). */
const PRUNE_POSTED_ABOVE = 64;

/**
 * Offsets compare within one memory: the same buffer, or any two shared buffers (the arena's
 * memory gets a new buffer object when it grows). A user's plain input and output arrays (over
 * TCP nothing is staged) never overlap, though both start at offset 0.
 */
function sameMemory(a: ArrayBufferLike, b: ArrayBufferLike): boolean {
  return a === b || (a instanceof SharedArrayBuffer && b instanceof SharedArrayBuffer);
}

/** Two views that start at the same byte of the same buffer: copying one onto the other is a no-op. */
export function sameView(a: ArrayBufferView, b: ArrayBufferView): boolean {
  return a.byteOffset === b.byteOffset && a.buffer === b.buffer;
}

function overlaps(s: PostedSend, v: TypedArray): boolean {
  return bytesOverlap(s.buffer, s.start, s.end, v);
}

/** Whether bytes [start, end) of `buffer` share any byte with view `v` (offsets compare within one memory). */
export function bytesOverlap(buffer: ArrayBufferLike, start: number, end: number, v: ArrayBufferView): boolean {
  return sameMemory(buffer, v.buffer) && v.byteOffset < end && start < v.byteOffset + v.byteLength;
}

type RecvStep = Extract<Step, { kind: 'recv' }>;

function slicesOverlap(a: Slice, b: Slice): boolean {
  return a.buf === b.buf && a.offset < b.offset + b.count && b.offset < a.offset + a.count;
}

function bytesOf(v: TypedArray): Uint8Array {
  return new Uint8Array(v.buffer, v.byteOffset, v.byteLength);
}

/** A plain receive copies bytes and takes pieces of any length and address; a reduction views whole elements. */
function pieceAlignment(step: Step, dtype: DTypeInfo): number {
  return step.kind === 'recv' ? 1 : dtype.bytes;
}

/**
 * One channel of one call: its steps in order. A class, not closures, because small calls run
 * one per call and each closure was an allocation.
 */
class ChannelRun {
  private readonly request: ExecRequest;
  private readonly channel: number;
  /** Every channel's posted sends of the call (a step must not overwrite bytes one still covers). */
  private readonly posted: PostedSend[];

  constructor(request: ExecRequest, channel: number, posted: PostedSend[]) {
    this.request = request;
    this.channel = channel;
    this.posted = posted;
  }

  async run(steps: readonly Step[]): Promise<void> {
    const { ctx } = this.request;
    for (let i = 0; i < steps.length; i++) {
      if (this.trySync(steps[i])) {
        ctx.stepDone?.();
        continue;
      }
      const together = this.recvRun(steps, i);
      if (together === 1) {
        await this.runAsync(steps[i]);
        ctx.stepDone?.();
        continue;
      }
      // Every receive of the run is settled before the call goes on or fails: none may write
      // into the caller's memory after the call has returned.
      const outcomes = await Promise.allSettled(steps.slice(i, i + together).map((step) => this.runAsync(step)));
      const failed = outcomes.find((o): o is PromiseRejectedResult => o.status === 'rejected');
      if (failed !== undefined) throw failed.reason;
      ctx.stepDone?.();
      i += together - 1;
    }
  }

  /**
   * How many steps from `i` on may wait together: a run of plain receives from different peers
   * into disjoint bytes, where the transport lets receives from different peers wait at once
   * (TCP). They commute: each writes its own bytes. Over TCP a direct all-gather's frames that
   * came before their turn were held back or buffered and copied again; 3 and 4 processes on 2
   * cores, 64 KiB a peer: 221-238 us a call against 364-422, and 348-515 against 828-831. A
   * reduction's steps keep the schedule's order (it fixes the order of the sums).
   */
  private recvRun(steps: readonly Step[], i: number): number {
    // Most steps that wait (a ring's, a tree's) start no run: answer them without allocating.
    if (!this.request.transport.concurrentRecvs || steps[i].kind !== 'recv' || steps[i + 1]?.kind !== 'recv') return 1;
    const taken: RecvStep[] = [];
    for (let j = i; j < steps.length; j++) {
      const step = steps[j];
      // One buffer only: in place, input and output are views of the same memory.
      if (
        step.kind !== 'recv' ||
        taken.some((t) => t.peer === step.peer || t.dst.buf !== step.dst.buf || slicesOverlap(t.dst, step.dst))
      )
        break;
      taken.push(step);
    }
    return taken.length;
  }

  private view(s: Slice): TypedArray {
    return this.request.buffers[s.buf].subarray(s.offset, s.offset + s.count) as TypedArray;
  }

  private post(handle: SendHandle, src: TypedArray): void {
    this.posted.push({ handle, buffer: src.buffer, start: src.byteOffset, end: src.byteOffset + src.byteLength });
  }

  /** Posted sends whose bytes overlap [v) and that the peer has not consumed yet. */
  private pendingOver(v: TypedArray): PostedSend[] {
    return this.recentPosts().filter((s) => overlaps(s, v) && !this.request.transport.isDelivered(s.handle));
  }

  /** The same question without building a list: asked on every spin of the fast path. */
  private isFree(v: TypedArray): boolean {
    for (const s of this.recentPosts())
      if (overlaps(s, v) && !this.request.transport.isDelivered(s.handle)) return false;
    return true;
  }

  /**
   * The posted sends, less those consumed once the list is long (a delivered send stays
   * delivered). Kept whole, the list grew with the call and every step scanned it: a 2-rank ring
   * all-reduce of 64 MB in 4 KiB pieces (16384 sends a rank) took 3.5 s, 0.4 pruned. A short list
   * is scanned as it is, so a spin asks the peer's consumed counters only of sends it overlaps.
   */
  private recentPosts(): PostedSend[] {
    const { posted } = this;
    if (posted.length <= PRUNE_POSTED_ABOVE) return posted;
    const { transport } = this.request;
    let kept = 0;
    for (let i = 0; i < posted.length; i++) {
      if (transport.isDelivered(posted[i].handle)) continue;
      if (kept !== i) posted[kept] = posted[i];
      kept++;
    }
    posted.length = kept;
    return posted;
  }

  private consumer(step: Step): Consume {
    if (step.kind === 'recv') return copyInto(bytesOf(this.view(step.dst)));
    const { dtype, kernel } = this.request;
    const dst = this.view((step as { dst: Slice }).dst);
    const src = this.view((step as { src: Slice }).src);
    return combineInto((piece, offset) => {
      const first = offset / dtype.bytes;
      const count = piece.byteLength / dtype.bytes;
      const incoming = new dtype.ctor(piece.buffer, piece.byteOffset, count);
      kernel(
        dst.subarray(first, first + count) as TypedArray,
        src.subarray(first, first + count) as TypedArray,
        incoming,
      );
    });
  }

  private local(step: Step): void {
    if (step.kind === 'copy') {
      const src = this.view(step.src);
      const dst = this.view(step.dst);
      if (!sameView(src, dst)) dst.set(src as never);
    } else if (step.kind === 'reduce') {
      const { kernel } = this.request;
      const dst = this.view(step.dst);
      const [first, ...rest] = step.srcs.map((s) => this.view(s));
      if (rest.length === 0) dst.set(first as never);
      for (const other of rest) kernel(dst, rest[0] === other ? first : dst, other);
    }
  }

  private written(step: Step): TypedArray | undefined {
    return step.kind === 'send' ? undefined : this.view(step.dst);
  }

  /** One step without waiting; false if it would have to wait. */
  private trySync(step: Step): boolean {
    const { transport, tag, ctx, dtype } = this.request;
    const dst = this.written(step);
    if (dst !== undefined && !spinUntil(() => this.isFree(dst), ctx)) return false;
    switch (step.kind) {
      case 'send': {
        if (transport.trySend === undefined) return false;
        const src = this.view(step.src);
        const data = bytesOf(src);
        let handle: SendHandle | undefined;
        if (!spinUntil(() => (handle = transport.trySend!(step.peer, this.channel, data, tag)) !== undefined, ctx))
          return false;
        this.post(handle!, src);
        return true;
      }
      case 'recv':
      case 'recvReduce': {
        if (transport.tryRecv === undefined) return false;
        const consume = this.consumer(step);
        const alignment = pieceAlignment(step, dtype);
        return spinUntil(
          () => transport.tryRecv!(step.peer, this.channel, dst!.byteLength, alignment, tag, consume),
          ctx,
        );
      }
      default:
        this.local(step);
        return true;
    }
  }

  /** One step, waiting as long as it takes (within the context's deadline). */
  private async runAsync(step: Step): Promise<void> {
    const { transport, tag, ctx, dtype } = this.request;
    const dst = this.written(step);
    if (dst !== undefined) for (const send of this.pendingOver(dst)) await transport.waitDelivered(send.handle, ctx);
    switch (step.kind) {
      case 'send': {
        const src = this.view(step.src);
        this.post(await transport.send(step.peer, this.channel, bytesOf(src), tag, ctx), src);
        break;
      }
      case 'recv':
      case 'recvReduce':
        await transport.recv(
          step.peer,
          this.channel,
          dst!.byteLength,
          pieceAlignment(step, dtype),
          tag,
          this.consumer(step),
          ctx,
        );
        break;
      default:
        this.local(step);
    }
  }
}
