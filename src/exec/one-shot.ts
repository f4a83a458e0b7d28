import {
  type OneShotPlan,
  type OneShotRead,
  cachedOneShotPlan,
  oneShotCount,
  publishesByReference,
} from '../algorithms/one-shot-plan.js';
import type { CallShape } from '../algorithms/schedule.js';
import type { DTypeInfo, TypedArray } from '../dtypes/dtype.js';
import { ErrorCode, TscclError } from '../errors.js';
import type { ReduceKernel } from '../kernels/reduce-kernel.js';
import type { LowLatencySlots, WaitContext } from '../transport/transport.js';
import { bytesOverlap } from './executor.js';

// Where the one-shot path's description lives; re-exported for the callers that name it here.
export { BY_REFERENCE_MIN_BYTES, ONE_SHOT, oneShotCount } from '../algorithms/one-shot-plan.js';

/**
 * Small collectives over the low-latency protocol, in one step, as their plan
 * (algorithms/one-shot-plan.ts) describes: the data is moved once more than by the zero-copy
 * schedules, which is cheap while it is small. A rank whose input lies where its peers can read
 * it (a registered buffer between thread ranks) publishes a message of BY_REFERENCE_MIN_BYTES or
 * more by reference instead of copying it into its slot, and returns once every peer has
 * released the call.
 */
export interface OneShotRequest {
  readonly shape: CallShape;
  readonly rank: number;
  /** This rank's input and output views (in place: two views of one array), in any memory. */
  readonly input: TypedArray;
  readonly output: TypedArray;
  readonly dtype: DTypeInfo;
  readonly kernel: ReduceKernel;
  readonly slots: LowLatencySlots;
  readonly opcode: number;
  /** What the calls of this shape share, where the caller keeps it (a call of a kept shape on other arrays). */
  readonly common?: OneShotCommon;
}

/**
 * What one-shot calls of one shape share on a rank, whatever arrays they run on: the plan, and
 * typed views of the peers' messages, which lie in the transport's memory. A job that passes a
 * fresh array each call (a loss, a tensor's data) makes a OneShotCall per call, and made these
 * each time too: a string key for the plan's cache and a view per peer.
 */
export class OneShotCommon {
  readonly plan: OneShotPlan;
  /** Each peer's message of the running call: one call at a time uses it, as a communicator runs them. */
  readonly messages: Uint8Array[];
  /**
   * Typed views of the plan's reads, per read and slot parity (index 2 * read + (seq & 1)): the
   * slots alternate between two message views, and a view kept per parity is made once.
   */
  readonly pieces: (TypedArray | undefined)[];
  readonly pieceSources: (Uint8Array | undefined)[];

  constructor(shape: CallShape, rank: number) {
    this.plan = cachedOneShotPlan(shape, rank);
    this.messages = new Array<Uint8Array>(shape.nranks);
    this.pieces = new Array<TypedArray | undefined>(2 * this.plan.reads.length).fill(undefined);
    this.pieceSources = new Array<Uint8Array | undefined>(2 * this.plan.reads.length).fill(undefined);
  }
}

/**
 * One call of the one-shot path, prepared once: a rank that repeats the call (same buffers, size,
 * op) runs it again with no new arrays or views, which is what a stream of small calls costs
 * most (an 8 B all-reduce allocated ~4.6 KB per call before). Runs one call at a time, as a
 * communicator does.
 */
export class OneShotCall {
  private readonly request: OneShotRequest;
  /** Where the result lands on this rank. */
  readonly output: TypedArray;
  private readonly plan: OneShotPlan;
  /** The ranks this rank waits for: the plan's eager set where the transport allows it. */
  private readonly awaits: readonly number[];
  private readonly bytes: number;
  /** What this rank publishes: its input's bytes, if it holds data. */
  private readonly data: Uint8Array | undefined;
  private readonly messages: Uint8Array[];
  private readonly pieces: (TypedArray | undefined)[];
  private readonly pieceSources: (Uint8Array | undefined)[];
  /** Whether this rank publishes its input by reference (peers read it in place) rather than a copy. */
  readonly byReference: boolean;
  /**
   * This rank's own message as its input holds it, where the output cannot overwrite it before it
   * is read: read there rather than in its slot, whose cache line the peers are pulling at that
   * moment (bench/RESULTS.md, "Small calls: a rank's own message from its input").
   */
  private readonly ownMessage: Uint8Array | undefined;

  constructor(request: OneShotRequest) {
    const { shape, rank, input } = request;
    this.request = request;
    this.output = request.output;
    const common = request.common ?? new OneShotCommon(shape, rank);
    this.plan = common.plan;
    this.messages = common.messages;
    this.pieces = common.pieces;
    this.pieceSources = common.pieceSources;
    this.awaits = request.slots.eagerRoot === true ? this.plan.eagerAwaits : this.plan.awaits;
    this.bytes = this.plan.messageCount * request.dtype.bytes;
    this.data = this.plan.publishesData ? new Uint8Array(input.buffer, input.byteOffset, this.bytes) : undefined;
    const data = this.data;
    this.byReference =
      data !== undefined &&
      publishesByReference(this.plan, this.bytes, {
        readable: request.slots.readsInPlace?.(data) === true,
        overOutput: bytesOverlap(data.buffer, data.byteOffset, data.byteOffset + data.byteLength, request.output),
      });
    this.ownMessage =
      data !== undefined && !this.byReference && ownReadsSurvive(this.plan, data, request.output, request.dtype.bytes)
        ? data
        : undefined;
  }

  /**
   * Runs call `seq`: undefined if it finished without waiting (peers kept up), else a promise.
   * Every rank publishes (with data if it holds any) and waits for every other (or, where the
   * transport allows, for the ranks the plan's eagerAwaits names): a rank that called something
   * else is then seen.
   */
  run(seq: number, ctx: WaitContext): Promise<void> | undefined {
    const { slots, opcode } = this.request;
    const pending = this.byReference
      ? slots.publishByReference!(seq, opcode, this.data!, ctx)
      : slots.publish(seq, opcode, this.bytes, this.data, ctx);
    if (pending !== undefined) return this.collectAfter(pending, seq, ctx, 0);
    return this.collect(seq, ctx, 0);
  }

  /** collect once `pending` settles; a method of its own, so that collect makes no closure. */
  private collectAfter(pending: Promise<void>, seq: number, ctx: WaitContext, from: number): Promise<void> {
    return pending.then(() => this.collect(seq, ctx, from));
  }

  /**
   * Waits for every rank the plan awaits from index `from` on and reads its message (which checks
   * it called the same), then computes the output.
   */
  private collect(seq: number, ctx: WaitContext, from: number): Promise<void> | undefined {
    const { slots, opcode } = this.request;
    const awaits = this.awaits;
    for (let i = from; i < awaits.length; i++) {
      const peer = awaits[i];
      if (peer === this.request.rank && this.ownMessage !== undefined) {
        this.messages[peer] = this.ownMessage;
        continue;
      }
      const pending = slots.arrived(peer, seq, ctx);
      if (pending !== undefined) return this.collectAfter(pending, seq, ctx, i);
      this.messages[peer] = slots.read(peer, seq, opcode, this.bytes);
    }
    this.combine(seq & 1);
    return this.release(seq, ctx);
  }

  /** Tells the peers this rank has read their messages, then waits until they have read its own if they read it in place. */
  private release(seq: number, ctx: WaitContext): Promise<void> | undefined {
    const { slots } = this.request;
    slots.release?.(seq);
    return this.byReference ? slots.released!(seq, ctx) : undefined;
  }

  /** Whether call `seq` read a peer's own memory in place (a message published by reference). */
  readPeerMemory(seq: number): boolean {
    return this.request.slots.readPeerMemory?.(seq) ?? true;
  }

  /** The plan's read i of a call of slot parity `parity`, as the dtype. */
  private piece(i: number, parity: number): TypedArray {
    const { shape, dtype } = this.request;
    const read = this.plan.reads[i];
    const data = this.messages[read.peer];
    const key = 2 * i + parity;
    if (this.pieceSources[key] !== data) {
      if (data.byteLength < (read.offset + shape.count) * dtype.bytes) {
        // A rank that holds no data publishes none (an empty message): a peer that thinks otherwise called another root.
        throw new TscclError(
          ErrorCode.MISMATCH,
          `Rank ${this.request.rank} needs rank ${read.peer}'s data for ${shape.collective}, but rank ${read.peer} sent none: the ranks called different roots`,
          { rank: this.request.rank, peer: read.peer, op: shape.collective },
        );
      }
      this.pieces[key] = new dtype.ctor(
        data.buffer,
        data.byteOffset + read.offset * dtype.bytes,
        shape.count,
      ) as TypedArray;
      this.pieceSources[key] = data;
    }
    return this.pieces[key]!;
  }

  /** Places the pieces side by side, or folds them onto the output in the plan's (rank) order. */
  private combine(parity: number): void {
    const { output, kernel } = this.request;
    const { reads, combine } = this.plan;
    const sources = reads.length;
    if (sources === 0) return;
    if (combine === 'place' || sources === 1) {
      for (let i = 0; i < sources; i++) output.set(this.piece(i, parity) as never, reads[i].outputOffset);
    } else {
      kernel(output, this.piece(0, parity), this.piece(1, parity));
      for (let i = 2; i < sources; i++) kernel(output, output, this.piece(i, parity));
    }
  }
}

/**
 * Whether every piece a rank reads of its own message (`data`, its input's first bytes) is read
 * before the output is written over it: a piece clear of the output; one the output covers
 * exactly that the first fold reads (either operand of the first kernel call, which reads each
 * element before writing it); one placed onto itself after placements that leave it be.
 */
function ownReadsSurvive(plan: OneShotPlan, data: Uint8Array, output: TypedArray, elementBytes: number): boolean {
  const { count, reads } = plan;
  const folds = plan.combine === 'reduce' && reads.length > 1;
  return reads.every((read, i) => {
    if (read.peer !== plan.rank) return true;
    const start = data.byteOffset + read.offset * elementBytes;
    if (!bytesOverlap(data.buffer, start, start + count * elementBytes, output)) return true;
    if (folds) return i < 2 && start === output.byteOffset;
    const placedOnItself = start === output.byteOffset + read.outputOffset * elementBytes;
    const clearOfEarlier = (earlier: OneShotRead) =>
      earlier.outputOffset + count <= read.outputOffset || read.outputOffset + count <= earlier.outputOffset;
    return placedOnItself && reads.slice(0, i).every(clearOfEarlier);
  });
}

/**
 * Whether the tuner may offer the one-shot path, the same on every rank: the bytes the largest
 * publisher publishes, and what a slot holds.
 */
export function oneShotOffer(
  shape: CallShape,
  elementBytes: number,
  capacity: number,
): { bytes: number; capacity: number } {
  return { bytes: oneShotCount(shape) * elementBytes, capacity };
}
