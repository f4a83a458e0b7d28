import type { CallShape, Collective } from './schedule.js';

/**
 * The one-shot collectives as data. Over the low-latency protocol every rank publishes once
 * (its input, if it holds data, or the call alone), waits for every peer's publication, and
 * reads what it needs straight from the publishers' slots: one write and one read per rank
 * instead of log2(n) or 2(n-1) hand-offs. A plan says, for one rank, what it publishes, whom it
 * waits for, which slots it reads and how the pieces become its output. The executor
 * (exec/one-shot.ts) runs it, the simulator (sim/one-shot-flows.ts) charges it and the verifier
 * (verify/verify-one-shot.ts) proves it.
 */

/** The one-shot path's name where algorithms are named (TSCCL_ALGO, the call option, the tuner, the simulator). */
export const ONE_SHOT = 'one_shot';

/**
 * Messages from this size on go by reference where they can (see exec/one-shot.ts). A smaller one
 * is copied: the copy costs less than the release every reader then owes its publisher
 * (docs/tuning.md, BY_REFERENCE_MIN_BYTES).
 */
export const BY_REFERENCE_MIN_BYTES = 2048;

/**
 * Whether a rank publishes its message by reference: peers can read its memory in place
 * (`readable`), the message is large enough, and, where it lies in the call's output (in
 * place), the plan writes the output only where no peer reads.
 */
export function publishesByReference(
  plan: Pick<OneShotPlan, 'byReferenceOverOutput'>,
  messageBytes: number,
  where: { readonly readable: boolean; readonly overOutput: boolean },
): boolean {
  return where.readable && messageBytes >= BY_REFERENCE_MIN_BYTES && (!where.overOutput || plan.byReferenceOverOutput);
}

/** How the pieces a rank reads become its output. */
export type OneShotCombine = 'reduce' | 'place' | 'none';

/** One piece a rank reads: `count` elements of a peer's message. */
export interface OneShotRead {
  /** The rank whose slot holds the piece (this rank's own, too). */
  readonly peer: number;
  /** The piece's first element in that message. */
  readonly offset: number;
  /** Where the piece lands in the output (placed pieces; 0 for a reduction, which folds them all onto the output). */
  readonly outputOffset: number;
}

export interface OneShotPlan {
  readonly collective: Collective;
  readonly nranks: number;
  readonly rank: number;
  /** Elements in every piece read. */
  readonly count: number;
  /**
   * Elements in the message every rank publishes: the same on every rank, so they all pick the
   * same protocol, and each checks its peers published the call it made.
   */
  readonly messageCount: number;
  /** Whether this rank's message carries data: the first messageCount elements of its input. Otherwise it publishes the call alone. */
  readonly publishesData: boolean;
  /** The ranks whose publication this rank waits for, itself included: every rank, so a rank that called something else is seen by all. */
  readonly awaits: readonly number[];
  /**
   * The ranks it waits for where a publication nobody reads leaves nothing behind (thread ranks'
   * slots, LowLatencySlots.eagerRoot): where only the root holds data (broadcast, scatter), a
   * reader waits for the root alone and the root for nobody, so the root leaves as soon as it has
   * published, as MPI's eager sends do, and back-to-back calls overlap. A reader that called
   * something else still meets the root's message and says so; elsewhere, as `awaits`.
   */
  readonly eagerAwaits: readonly number[];
  readonly combine: OneShotCombine;
  /** The pieces this rank reads, in the order it folds or places them: rank order, so every rank reduces to bitwise the same result. */
  readonly reads: readonly OneShotRead[];
  /**
   * Whether this rank may publish by reference though its output covers what it publishes (in
   * place): its writes leave those bytes as they are (an all-gather, gather or broadcast only
   * writes its own data back onto itself).
   */
  readonly byReferenceOverOutput: boolean;
}

interface Pattern {
  /** Whose message holds data: every rank's, or the root's alone. */
  readonly from: 'all' | 'root';
  /** Who computes a result. */
  readonly to: 'all' | 'root';
  /** What a reader takes from each message: the whole of it, or its own block of it. */
  readonly part: 'whole' | 'block';
  readonly combine: OneShotCombine;
}

const PATTERNS: Readonly<Record<Collective, Pattern>> = {
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

/** One rank's plan, built afresh (the simulator's and the verifier's way; the executor uses cachedOneShotPlan). */
export function oneShotPlan(shape: CallShape, rank: number): OneShotPlan {
  const { collective, nranks, count, root } = shape;
  const pattern = PATTERNS[collective];
  const computes = pattern.combine !== 'none' && (pattern.to === 'all' || rank === root);
  const sources = pattern.from === 'all' ? Array.from({ length: nranks }, (_, peer) => peer) : [root];
  const offset = pattern.part === 'block' ? rank * count : 0;
  const awaits = Array.from({ length: nranks }, (_, peer) => peer);
  const reads = computes
    ? sources.map(
        (peer, i): OneShotRead => ({ peer, offset, outputOffset: pattern.combine === 'place' ? i * count : 0 }),
      )
    : [];
  return {
    collective,
    nranks,
    rank,
    count,
    messageCount: collective === 'barrier' ? 0 : oneShotCount(shape),
    publishesData: pattern.from === 'all' || rank === root,
    awaits,
    eagerAwaits: pattern.from === 'root' ? [root] : awaits,
    combine: pattern.combine,
    reads,
    byReferenceOverOutput: pattern.combine === 'place' && pattern.part === 'whole',
  };
}

const cache = new Map<string, OneShotPlan>();
const CACHE_LIMIT = 1024;

/** One rank's plan, kept per shape as schedules are (registry.ts's buildSchedule), for the executor. */
export function cachedOneShotPlan(shape: CallShape, rank: number): OneShotPlan {
  const key = `${shape.collective}|${shape.nranks}|${rank}|${shape.count}|${shape.root}`;
  let plan = cache.get(key);
  if (plan === undefined) {
    plan = oneShotPlan(shape, rank);
    if (cache.size >= CACHE_LIMIT) cache.clear();
    cache.set(key, plan);
  }
  return plan;
}
