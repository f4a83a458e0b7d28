import type { CallShape, Collective } from '../algorithms/schedule.js';
import type { DTypeInfo, TypedArray } from '../dtypes/dtype.js';
import { ErrorCode, TscclError } from '../errors.js';
import type { ReduceKernel } from '../kernels/reduce-kernel.js';
import type { LowLatencySlots, WaitContext } from '../transport/transport.js';
import { bytesOverlap } from './executor.js';

/** The one-shot path's name where algorithms are named (TSCCL_ALGO, the call option, the tuner, the simulator). */
export const ONE_SHOT = 'one_shot';

/**
 * Messages from this size on go by reference where they can (see OneShotCall). A smaller one is
 * copied: the copy costs less than the release every reader then owes its publisher. 2 thread
 * ranks, one-shot all-reduce, us per call (bench/latency.mjs, medians of 3 alternating runs per
 * build, copying / by reference): 8 B 1.64 / 1.79, 1 KiB 1.24-2.24 / 1.26-2.37 (two cache states,
 * level in each), 4 KiB 1.53 / 1.43, 32 KiB 3.80 / 3.35; all-gather of 32 KiB 4.39-4.73 / 3.37-3.56.
 */
export const BY_REFERENCE_MIN_BYTES = 2048;

/**
 * Small collectives over the low-latency protocol, in one step: the ranks that hold data publish
 * their whole input, and every rank that needs a result reads what it needs straight from the
 * publishers' slots. One write and one read per rank instead of log2(n) or 2(n-1) hand-offs;
 * the data is moved once more than by the zero-copy schedules, which is cheap while it is small.
 * Reductions fold in rank order (r0 op r1 op ...), so every rank gets bitwise the same result.
 * A rank whose input lies where its peers can read it (a registered buffer between thread ranks)
 * publishes a message of BY_REFERENCE_MIN_BYTES or more by reference instead of copying it into
 * its slot, and returns once every peer has released the call.
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
}

interface Pattern {
  /** Whose message holds data: every rank's, or the root's alone. */
  readonly from: 'all' | 'root';
  /** Who computes a result. */
  readonly to: 'all' | 'root';
  /** What a reader takes from each slot: the whole message, or its own block of it. */
  readonly part: 'whole' | 'block';
  /** How the pieces become the output: reduced in rank order, or placed side by side. */
  readonly combine: 'reduce' | 'place' | 'none';
}

const PATTERNS: Record<Collective, Pattern> = {
  allReduce: { from: 'all', to: 'all', part: 'whole', combine: 'reduce' },
  reduce: { from: 'all', to: 'root', part: 'whole', combine: 'reduce' },
  reduceScatter: { from: 'all', to: 'all', part: 'block', combine: 'reduce' },
  allGather: { from: 'all', to: 'all', part: 'whole', combine: 'place' },
  gather: { from: 'all', to: 'root', part: 'whole', combine: 'place' },
  allToAll: { from: 'all', to: 'all', part: 'block', combine: 'place' },
  broadcast: { from: 'root', to: 'all', part: 'whole', combine: 'place' },
  scatter: { from: 'root', to: 'all', part: 'block', combine: 'place' },
  barrier: { from: 'all', to: 'all', part: 'whole', combine: 'none' },
};

/**
 * Elements the largest publisher of a call publishes, the same on every rank (so every rank
 * picks the same protocol); Infinity where the one-shot path does not apply (all-to-all-v).
 */
export function oneShotCount(shape: CallShape): number {
  if (shape.sendCounts !== undefined || shape.recvCounts !== undefined) return Infinity;
  return PATTERNS[shape.collective].part === 'block' ? shape.nranks * shape.count : shape.count;
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
  private readonly pattern: Pattern;
  private readonly bytes: number;
  /** What this rank publishes: its input's bytes, if it holds data. */
  private readonly data: Uint8Array | undefined;
  /** Each peer's message of the running call. */
  private readonly messages: Uint8Array[];
  /** Typed views of the messages, kept while the slots hand back the same message views. */
  private readonly pieces: (TypedArray | undefined)[];
  private readonly pieceSources: (Uint8Array | undefined)[];
  /** Whether this rank publishes its input by reference (peers read it in place) rather than a copy. */
  readonly byReference: boolean;

  constructor(request: OneShotRequest) {
    const { shape, rank, input } = request;
    this.request = request;
    this.output = request.output;
    this.pattern = PATTERNS[shape.collective];
    this.bytes = shape.collective === 'barrier' ? 0 : oneShotCount(shape) * request.dtype.bytes;
    this.data = this.pattern.from === 'all' || rank === shape.root ? new Uint8Array(input.buffer, input.byteOffset, this.bytes) : undefined;
    this.messages = new Array<Uint8Array>(shape.nranks);
    this.pieces = new Array<TypedArray | undefined>(shape.nranks).fill(undefined);
    this.pieceSources = new Array<Uint8Array | undefined>(shape.nranks).fill(undefined);
    this.byReference = this.data !== undefined && this.bytes >= BY_REFERENCE_MIN_BYTES && request.slots.readsInPlace?.(this.data) === true
      && (!bytesOverlap(this.data.buffer, this.data.byteOffset, this.data.byteOffset + this.data.byteLength, request.output) || this.keepsOwnData());
  }

  /**
   * Whether this rank's writes leave the bytes it publishes as they are though its output covers
   * them: an in-place all-gather, gather or broadcast only writes its own data back onto itself.
   */
  private keepsOwnData(): boolean {
    return this.pattern.combine === 'place' && this.pattern.part === 'whole';
  }

  /**
   * Runs call `seq`: undefined if it finished without waiting (peers kept up), else a promise.
   * Every rank publishes (with data if it holds any) and waits for every other: a rank that
   * called something else is then seen by all, and no rank leaves a call its peers never joined.
   */
  run(seq: number, ctx: WaitContext): Promise<void> | undefined {
    const { slots, opcode } = this.request;
    const pending = this.byReference ? slots.publishByReference!(seq, opcode, this.data!, ctx) : slots.publish(seq, opcode, this.bytes, this.data, ctx);
    if (pending !== undefined) return pending.then(() => this.collect(seq, ctx, 0));
    return this.collect(seq, ctx, 0);
  }

  /**
   * Waits for every rank from `from` on and reads its message (which checks it called the same),
   * then computes the output.
   */
  private collect(seq: number, ctx: WaitContext, from: number): Promise<void> | undefined {
    const { shape, slots, opcode } = this.request;
    for (let peer = from; peer < shape.nranks; peer++) {
      const pending = slots.arrived(peer, seq, ctx);
      if (pending !== undefined) return pending.then(() => this.collect(seq, ctx, peer));
      this.messages[peer] = slots.read(peer, seq, opcode, this.bytes);
    }
    this.combine();
    return this.release(seq, ctx);
  }

  /** Tells the peers this rank has read their messages, then waits until they have read its own if they read it in place. */
  private release(seq: number, ctx: WaitContext): Promise<void> | undefined {
    const { slots } = this.request;
    slots.release?.(seq);
    return this.byReference ? slots.released!(seq, ctx) : undefined;
  }

  /** Source i's part of its message, as the dtype. */
  private piece(i: number): TypedArray {
    const { shape, dtype } = this.request;
    const from = this.pattern.from === 'all' ? i : shape.root;
    const data = this.messages[from];
    if (this.pieceSources[i] !== data) {
      const first = this.pattern.part === 'block' ? this.request.rank * shape.count : 0;
      if (data.byteLength < (first + shape.count) * dtype.bytes) {
        // Over TCP a rank that holds no data sends none: a peer that thinks otherwise called another root.
        throw new TscclError(ErrorCode.MISMATCH, `Rank ${this.request.rank} needs rank ${from}'s data for ${shape.collective}, but rank ${from} sent none: the ranks called different roots`,
          { rank: this.request.rank, peer: from, op: shape.collective });
      }
      this.pieces[i] = new dtype.ctor(data.buffer, data.byteOffset + first * dtype.bytes, shape.count) as TypedArray;
      this.pieceSources[i] = data;
    }
    return this.pieces[i]!;
  }

  private combine(): void {
    const { shape, rank, output, kernel } = this.request;
    const pattern = this.pattern;
    if (pattern.combine === 'none' || (pattern.to === 'root' && rank !== shape.root)) return;
    const sources = pattern.from === 'all' ? shape.nranks : 1;
    if (pattern.combine === 'place') {
      for (let i = 0; i < sources; i++) output.set(this.piece(i) as never, i * shape.count);
    } else if (sources === 1) {
      output.set(this.piece(0) as never);
    } else {
      kernel(output, this.piece(0), this.piece(1));
      for (let i = 2; i < sources; i++) kernel(output, output, this.piece(i));
    }
  }
}

/**
 * Whether the tuner may offer the one-shot path, the same on every rank: the bytes the largest
 * publisher publishes, and what a slot holds.
 */
export function oneShotOffer(shape: CallShape, elementBytes: number, capacity: number): { bytes: number; capacity: number } {
  return { bytes: oneShotCount(shape) * elementBytes, capacity };
}

/**
 * The peers one rank waits for and the elements it reads from each one's slot: the simulator
 * charges the one-shot path by these. Every rank waits for every peer (that is how a rank that
 * called something else is seen), but reads only where the pattern gives it data.
 */
export function oneShotReads(shape: CallShape, rank: number): { peer: number; count: number }[] {
  const pattern = PATTERNS[shape.collective];
  const reads = pattern.combine !== 'none' && (pattern.to === 'all' || rank === shape.root);
  const peers = Array.from({ length: shape.nranks }, (_, peer) => peer).filter((peer) => peer !== rank);
  return peers.map((peer) => ({ peer, count: reads && (pattern.from === 'all' || peer === shape.root) ? shape.count : 0 }));
}
