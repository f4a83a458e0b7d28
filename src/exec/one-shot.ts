import type { CallShape, Collective } from '../algorithms/schedule.js';
import type { DTypeInfo, TypedArray } from '../dtypes/dtype.js';
import type { ReduceKernel } from '../kernels/reduce-kernel.js';
import type { LowLatencySlots, WaitContext } from '../transport/transport.js';

/** The one-shot path's name where algorithms are named (TSCCL_ALGO, the call option, the tuner, the simulator). */
export const ONE_SHOT = 'one_shot';

/**
 * Small collectives over the low-latency protocol, in one step: the ranks that hold data publish
 * their whole input, and every rank that needs a result reads what it needs straight from the
 * publishers' slots. One write and one read per rank instead of log2(n) or 2(n-1) hand-offs;
 * the data is moved once more than by the zero-copy schedules, which is cheap while it is small.
 * Reductions fold in rank order (r0 op r1 op ...), so every rank gets bitwise the same result.
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
  readonly seq: number;
  readonly opcode: number;
  readonly ctx: WaitContext;
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
 * Runs the call: undefined if it finished without waiting (peers kept up), else a promise. Every
 * rank publishes (with data if it holds any) and waits for every other: a rank that called
 * something else is then seen by all, and no rank leaves a call its peers never joined.
 */
export function runOneShot(request: OneShotRequest): Promise<void> | undefined {
  const { shape, rank, slots, seq, opcode, ctx, input } = request;
  const pattern = PATTERNS[shape.collective];
  const bytes = messageBytes(request);
  const data = pattern.from === 'all' || rank === shape.root ? new Uint8Array(input.buffer, input.byteOffset, bytes) : undefined;
  const messages = new Array<Uint8Array>(shape.nranks);
  const pending = slots.publish(seq, opcode, bytes, data, ctx);
  if (pending !== undefined) return pending.then(() => collect(request, bytes, messages, 0));
  return collect(request, bytes, messages, 0);
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

/** Bytes of the call's message (0 for a barrier, which only raises its flag). */
function messageBytes(request: OneShotRequest): number {
  return request.shape.collective === 'barrier' ? 0 : oneShotCount(request.shape) * request.dtype.bytes;
}

/**
 * Waits for every rank from `from` on and reads its message (which checks it called the same),
 * then computes the output.
 */
function collect(request: OneShotRequest, bytes: number, messages: Uint8Array[], from: number): Promise<void> | undefined {
  const { shape, slots, seq, opcode, ctx } = request;
  for (let peer = from; peer < shape.nranks; peer++) {
    const pending = slots.arrived(peer, seq, ctx);
    if (pending !== undefined) return pending.then(() => collect(request, bytes, messages, peer));
    messages[peer] = slots.read(peer, seq, opcode, bytes);
  }
  combine(request, messages);
  return undefined;
}

function combine(request: OneShotRequest, messages: readonly Uint8Array[]): void {
  const { shape, rank, dtype, output } = request;
  const pattern = PATTERNS[shape.collective];
  if (pattern.combine === 'none' || (pattern.to === 'root' && rank !== shape.root)) return;
  const sources = pattern.from === 'all' ? shape.nranks : 1;
  const count = shape.count;
  const first = pattern.part === 'block' ? rank * count : 0;
  const piece = (i: number): TypedArray => {
    const data = messages[pattern.from === 'all' ? i : shape.root];
    return new dtype.ctor(data.buffer, data.byteOffset + first * dtype.bytes, count) as TypedArray;
  };
  if (pattern.combine === 'place') {
    for (let i = 0; i < sources; i++) output.set(piece(i) as never, i * count);
  } else if (sources === 1) {
    output.set(piece(0) as never);
  } else {
    request.kernel(output, piece(0), piece(1));
    for (let i = 2; i < sources; i++) request.kernel(output, output, piece(i));
  }
}
