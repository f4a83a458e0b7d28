/**
 * The schedule IR: what one rank does for one collective call, as plain data. Algorithms emit
 * it; the executor runs it on a transport; the verifier runs it symbolically. Nothing here may
 * import a transport, a timer or I/O.
 *
 * Semantics every consumer shares:
 * - Steps in a channel run in order; channels run concurrently. (An executor may run plain
 *   receives from different peers into disjoint bytes together: they commute.)
 * - A send is posted and the channel moves on; the receiver reads the sender's slice when it
 *   executes the matching recv (zero copy), so the sender must not overwrite a slice that a
 *   posted send still covers until the receiver has consumed it. The executor waits for that;
 *   the verifier models it.
 * - Sends and recvs between an ordered pair of ranks on a channel match in order (FIFO), and
 *   each match must agree on the element count.
 */
export type BufferId = 'input' | 'output' | 'scratch';

export interface Slice {
  readonly buf: BufferId;
  readonly offset: number;
  readonly count: number;
}

export type Step =
  | { readonly kind: 'send'; readonly peer: number; readonly src: Slice }
  /** `src` is undefined: a recv has recvReduce's shape, so code that takes both sees one kind of object. */
  | { readonly kind: 'recv'; readonly peer: number; readonly dst: Slice; readonly src?: undefined }
  /** dst = src (op) incoming; dst and src may be the same slice. */
  | { readonly kind: 'recvReduce'; readonly peer: number; readonly dst: Slice; readonly src: Slice }
  | { readonly kind: 'copy'; readonly src: Slice; readonly dst: Slice }
  /** dst = srcs[0] (op) srcs[1] (op) ... */
  | { readonly kind: 'reduce'; readonly srcs: readonly Slice[]; readonly dst: Slice };

export const COLLECTIVES = [
  'allReduce',
  'broadcast',
  'reduce',
  'allGather',
  'reduceScatter',
  'allToAll',
  'gather',
  'scatter',
  'barrier',
] as const;
export type Collective = (typeof COLLECTIVES)[number];

/** Collectives that combine data with a reduction operator. */
export const REDUCING_COLLECTIVES: ReadonlySet<Collective> = new Set<Collective>([
  'allReduce',
  'reduce',
  'reduceScatter',
]);

/** Collectives whose data starts or ends at one rank, the call's root. */
export const ROOTED_COLLECTIVES: ReadonlySet<Collective> = new Set<Collective>([
  'broadcast',
  'reduce',
  'gather',
  'scatter',
]);

/** Whether an operation's name (a collective's, or send, recv, barrier) is one with a root. */
export const isRooted = (op: string): boolean => (ROOTED_COLLECTIVES as ReadonlySet<string>).has(op);

/**
 * What an algorithm needs to know about a call. Counts are in elements:
 * - allReduce, broadcast, reduce: `count` elements in and out.
 * - allGather, gather: `count` per rank in, nranks*count out. reduceScatter, scatter: the reverse.
 * - allToAll: `sendCounts`/`sendDispls` (per destination) and `recvCounts`/`recvDispls` (per
 *   source) of this rank; an equal all-to-all is the special case with count per peer.
 * - inPlace: input and output share storage as the collective defines (see inPlaceOffsets).
 */
export interface CallShape {
  readonly collective: Collective;
  readonly nranks: number;
  readonly count: number;
  readonly root: number;
  readonly inPlace: boolean;
  /** Pipelining granularity in elements; 0 means one piece. */
  readonly chunkCount: number;
  readonly sendCounts?: readonly number[];
  readonly sendDispls?: readonly number[];
  readonly recvCounts?: readonly number[];
  readonly recvDispls?: readonly number[];
  /**
   * Host index of every rank (0-based, dense): ranks of one host share a machine. Hierarchical
   * algorithms use it; the others ignore it.
   */
  readonly hosts?: readonly number[];
}

export interface Schedule {
  readonly collective: Collective;
  readonly algorithm: string;
  readonly nranks: number;
  readonly rank: number;
  readonly channels: readonly (readonly Step[])[];
  /** Elements of scratch this rank needs. */
  readonly scratchCount: number;
}

export type ScheduleGenerator = (shape: CallShape, rank: number) => Schedule;

export const slice = (buf: BufferId, offset: number, count: number): Slice => ({ buf, offset, count });

/** A contiguous range of elements. */
export interface Range {
  readonly offset: number;
  readonly count: number;
}

/** n nearly equal contiguous parts of [0, count): sizes differ by at most one. */
export function splitEven(count: number, parts: number): Range[] {
  const ranges: Range[] = [];
  const base = Math.floor(count / parts);
  const extra = count % parts;
  let offset = 0;
  for (let i = 0; i < parts; i++) {
    const size = base + (i < extra ? 1 : 0);
    ranges.push({ offset, count: size });
    offset += size;
  }
  return ranges;
}

/** How many rounds pieceRounds cuts a longest segment of `longest` elements into (chunkCount 0: one). */
export function pieceRoundCount(longest: number, chunkCount: number): number {
  return chunkCount > 0 ? Math.max(1, Math.ceil(longest / chunkCount)) : 1;
}

/** The whole message (shape.count elements from offset 0) cut into the call's chunks: what a pipelined tree or chain streams. */
export function messagePieces(shape: CallShape): Range[] {
  return pieceRounds([{ offset: 0, count: shape.count }], shape.chunkCount).map(([piece]) => piece);
}

/**
 * Cuts each segment into pieces of at most chunkCount elements; round j holds piece j of every
 * segment (empty where a segment is shorter). Ring-style algorithms run once per round, which is
 * what pipelines a large message.
 */
export function pieceRounds(segments: readonly Range[], chunkCount: number): Range[][] {
  const longest = segments.reduce((m, s) => Math.max(m, s.count), 0);
  const chunk = chunkCount > 0 ? chunkCount : Math.max(longest, 1);
  const roundCount = pieceRoundCount(longest, chunkCount);
  const rounds: Range[][] = [];
  for (let j = 0; j < roundCount; j++) {
    rounds.push(
      segments.map((s) => {
        const start = Math.min(s.count, j * chunk);
        const end = Math.min(s.count, (j + 1) * chunk);
        return { offset: s.offset + start, count: end - start };
      }),
    );
  }
  return rounds;
}

export const mod = (a: number, n: number): number => ((a % n) + n) % n;

/** Collects the steps of one channel, dropping transfers of zero elements (both sides agree). */
export class StepList {
  readonly steps: Step[] = [];

  send(peer: number, src: Slice): void {
    if (src.count > 0) this.steps.push({ kind: 'send', peer, src });
  }

  recv(peer: number, dst: Slice): void {
    if (dst.count > 0) this.steps.push({ kind: 'recv', peer, dst, src: undefined });
  }

  recvReduce(peer: number, dst: Slice, src: Slice): void {
    if (dst.count > 0) this.steps.push({ kind: 'recvReduce', peer, dst, src });
  }

  copy(src: Slice, dst: Slice): void {
    if (src.count > 0 && !(src.buf === dst.buf && src.offset === dst.offset))
      this.steps.push({ kind: 'copy', src, dst });
  }

  /** Transfers that must happen even when empty: they carry a count for the peer to check, or they synchronise. */
  sendAlways(peer: number, src: Slice): void {
    this.steps.push({ kind: 'send', peer, src });
  }

  recvAlways(peer: number, dst: Slice): void {
    this.steps.push({ kind: 'recv', peer, dst, src: undefined });
  }
}

export function singleChannel(
  shape: CallShape,
  rank: number,
  algorithm: string,
  list: StepList,
  scratchCount = 0,
): Schedule {
  return {
    collective: shape.collective,
    algorithm,
    nranks: shape.nranks,
    rank,
    channels: [list.steps],
    scratchCount,
  };
}

/**
 * How input and output share storage in an in-place call: one of them is a view into the other,
 * `offset` elements in. The executor builds its views from this, the verifier its memory model.
 */
export interface InPlaceLayout {
  readonly inner: 'input' | 'output';
  readonly offset: number;
}

/** The buffer of an in-place call that spans the whole array: the one its inner view lies in. */
export const outerBuffer = (layout: InPlaceLayout): 'input' | 'output' =>
  layout.inner === 'input' ? 'output' : 'input';

export function inPlaceLayout(shape: CallShape, rank: number): InPlaceLayout {
  switch (shape.collective) {
    case 'allGather':
      return { inner: 'input', offset: rank * shape.count };
    case 'gather':
      return { inner: 'input', offset: rank === shape.root ? shape.root * shape.count : 0 };
    case 'reduceScatter':
      return { inner: 'output', offset: rank * shape.count };
    case 'scatter':
      return { inner: 'output', offset: rank === shape.root ? shape.root * shape.count : 0 };
    default:
      return { inner: 'input', offset: 0 };
  }
}

/** Elements the one array of an in-place call must hold: the outer buffer, or the inner view's end if that is further. */
export function inPlaceExtent(shape: CallShape, rank: number): number {
  const layout = inPlaceLayout(shape, rank);
  const needed = bufferCounts(shape, rank);
  return Math.max(needed[layout.inner === 'input' ? 'output' : 'input'], layout.offset + needed[layout.inner]);
}

/** Elements in each buffer of one rank for a call; the executor checks user buffers against it. */
export function bufferCounts(shape: CallShape, rank: number): { input: number; output: number } {
  const { count: c, nranks: n, root } = shape;
  const isRoot = rank === root;
  switch (shape.collective) {
    case 'allReduce':
      return { input: c, output: c };
    case 'broadcast':
      return { input: isRoot ? c : 0, output: c };
    case 'reduce':
      return { input: c, output: isRoot ? c : 0 };
    case 'allGather':
      return { input: c, output: n * c };
    case 'reduceScatter':
      return { input: n * c, output: c };
    case 'gather':
      return { input: c, output: isRoot ? n * c : 0 };
    case 'scatter':
      return { input: isRoot ? n * c : 0, output: c };
    case 'barrier':
      return { input: 0, output: 0 };
    case 'allToAll': {
      const extent = (counts: readonly number[] | undefined, displs: readonly number[] | undefined) =>
        counts === undefined ? n * c : Math.max(0, ...counts.map((k, i) => (displs?.[i] ?? 0) + k));
      return { input: extent(shape.sendCounts, shape.sendDispls), output: extent(shape.recvCounts, shape.recvDispls) };
    }
  }
}

/**
 * The fewest posted-but-unread sends a transport must hold per ordered pair and channel before a
 * further send blocks. The verifier proves freedom from deadlock at this depth, which covers
 * every deeper transport too.
 */
export const MIN_SEND_QUEUE_DEPTH = 16;

/**
 * Which ranks share a host, from CallShape.hosts (a host index per rank; every rank its own
 * host when absent). The leader of a host is its lowest rank unless `preferred` is on it.
 */
export interface HostLayout {
  readonly hostOf: readonly number[];
  /** Ranks of each host, ascending. */
  readonly members: readonly (readonly number[])[];
  /** The leader of each host. */
  readonly leaders: readonly number[];
}

/**
 * The host layout tsccl's communicators give their calls: none when every rank is on one host,
 * so that a schedule laid out by host (the tree) treats each rank as its own host there (a
 * binary tree of the ranks, not a chain through them).
 */
export function executorHosts(hosts: readonly number[]): readonly number[] | undefined {
  return new Set(hosts).size > 1 ? hosts : undefined;
}

/** Layouts by the hosts array they were read from: every rank of a call asks for the same one, and a 16,384-rank layout takes a pass over all ranks. */
const layouts = new WeakMap<readonly number[], HostLayout>();

export function hostLayout(shape: CallShape, preferred?: number): HostLayout {
  if (shape.hosts === undefined || preferred !== undefined) return layoutOf(shape, preferred);
  let layout = layouts.get(shape.hosts);
  if (layout === undefined) {
    layout = layoutOf(shape);
    layouts.set(shape.hosts, layout);
  }
  return layout;
}

function layoutOf(shape: CallShape, preferred?: number): HostLayout {
  const hostOf = shape.hosts ?? Array.from({ length: shape.nranks }, (_, r) => r);
  let hostCount = 0;
  for (const host of hostOf) hostCount = Math.max(hostCount, host + 1);
  const members: number[][] = Array.from({ length: hostCount }, () => []);
  hostOf.forEach((h, r) => {
    members[h].push(r);
  });
  const leaders = members.map((m, h) => (preferred !== undefined && hostOf[preferred] === h ? preferred : m[0]));
  return { hostOf, members, leaders };
}
