/**
 * A measured training run replayed with the simulator's call times: each rank keeps the compute
 * and the issue times its trace recorded, each collective takes the time the simulator predicts,
 * and each of the rank's waits lasts until the calls it waited for would have ended. What comes
 * out is the exposed communication (the waits) per group, predicted beside measured.
 */

/** One span of a Chrome trace as tsccl/train's writeTrace writes it (times in us since the epoch). */
export interface ReplaySpan {
  readonly ph: string;
  readonly name: string;
  readonly cat?: string;
  readonly pid: number;
  readonly ts?: number;
  readonly dur?: number;
  readonly args?: Readonly<Record<string, unknown>>;
}

/** A collective, or a message from a send to its receive, as the simulator is asked to price it. */
export interface ReplayCall {
  /** The flight recorder's name of the collective (allReduce, reduceScatter, ...), or 'send' for a message. */
  readonly op: string;
  readonly dtype: string;
  readonly count: number;
  /** Ranks of its communicator. */
  readonly size: number;
  /** The world ranks (trace processes) that took part, ascending: where on the topology to price it. */
  readonly ranks: readonly number[];
}

/** Exposed communication of one rank in one group (a StepTrace communicator's name: dp, tp, pp). */
export interface ReplayGroup {
  readonly group: string;
  readonly rank: number;
  readonly waits: number;
  readonly measuredMs: number;
  readonly predictedMs: number;
  /**
   * The part of predictedMs the replay gives with every call taking no time: waiting for the
   * other ranks to issue (their compute ran longer), which the trace measured.
   */
  readonly peersMs: number;
  /**
   * The part of predictedMs in which the rank's thread was collecting garbage after the calls had
   * ended (the trace's gc spans): it sees them end only after. The rest is the simulator's.
   */
  readonly collectionsMs: number;
}

export interface ReplayReport {
  /** How the calls progressed: on the ranks' own threads (inline), on progress engines, or both. */
  readonly progress: 'inline' | 'engine' | 'mixed';
  readonly ranks: number;
  /** Collectives replayed (counted once however many ranks took part). */
  readonly calls: number;
  /** Messages replayed: a send and its receive, both in the trace. */
  readonly messages: number;
  /** Collectives the pricing could not price, by op: the waits on them keep their measured time. */
  readonly unpriced: Readonly<Record<string, number>>;
  readonly groups: readonly ReplayGroup[];
  /** Waits for nothing the trace holds (a receive whose send is not in it): not replayed. */
  readonly otherWaits: number;
}

/** Each thread adds its own time origin to the epoch clock, so a call's end may read a little after its wait's. */
const CLOCK_SLACK_US = 100;

interface Member {
  readonly rank: number;
  readonly issueUs: number;
  /** When the rank's flight recorder saw the call end. */
  readonly endUs: number;
  /** A send of a message: the rank does not wait for it unless it ended while the rank waited. */
  readonly sending: boolean;
}

/** A collective, or a message (its send and its receive). */
interface Call {
  /** Calls of one stream run one after another: a communicator's collectives; its messages one way between two ranks. */
  readonly stream: string;
  readonly group: string;
  readonly seq: number;
  /** What is priced, but its ranks: those are its members'. */
  readonly call: Omit<ReplayCall, 'ranks'>;
  readonly engine: boolean;
  readonly members: Member[];
  readonly message: boolean;
}

interface Wait {
  readonly rank: number;
  readonly startUs: number;
  readonly endUs: number;
  /** As recorded: ends less start loses the fraction of a microsecond at the epoch's magnitude. */
  readonly durUs: number;
}

/**
 * Replays `trace`; `priceUs` gives a call's time on the modelled machine, or undefined if it
 * cannot. A call (a collective; a message from a send to its receive) starts once every member
 * has issued it and the previous call of its stream has ended (a communicator's collectives; its
 * messages one way between two ranks). On a progress engine it then runs for its predicted time;
 * inline, it advances only while no member computes or collects garbage (its ranks' threads
 * drive it). A rank collecting garbage when its calls end sees them end after. A wait lasts
 * until the last call it waited for ends (a data-parallel step waits for every bucket and the
 * loss; a pipeline stage for a receive) and belongs to that call's group. A rank issues nothing
 * while it waits, so a call recorded as queued during the wait was issued before it: a progress
 * engine records a call when it takes it from the rank. Each wait is predicted from measured
 * issue times, so an error does not carry into later steps.
 */
export function replayTrace(
  trace: { readonly traceEvents: readonly ReplaySpan[] },
  priceUs: (call: ReplayCall) => number | undefined,
): ReplayReport {
  const busySpans = new Map<number, Span[]>();
  const collectingSpans = new Map<number, Span[]>();
  const computingSpans = new Map<number, Span[]>();
  const waits: Wait[] = [];
  const calls = new Map<string, Call>();
  /** Per rank, each call it took part in with its own part of it. */
  const issued = new Map<number, { call: Call; mine: Member }[]>();
  const ranks = new Set<number>();
  for (const e of trace.traceEvents) {
    if (e.ph !== 'X' || e.ts === undefined || e.cat === undefined) continue;
    ranks.add(e.pid);
    const endUs = e.ts + (e.dur ?? 0);
    if (e.cat === 'compute' || e.cat === 'gc') listOf(busySpans, e.pid).push([e.ts, endUs]);
    if (e.cat === 'compute') listOf(computingSpans, e.pid).push([e.ts, endUs]);
    if (e.cat === 'gc') listOf(collectingSpans, e.pid).push([e.ts, endUs]);
    else if (e.cat === 'wait') waits.push({ rank: e.pid, startUs: e.ts, endUs, durUs: e.dur ?? 0 });
    else if (e.cat.startsWith('comm ') && typeof e.args?.seq === 'number') {
      const args = e.args;
      const commName = typeof args.comm === 'string' ? args.comm : e.cat.slice(5);
      // A message is one call of its sender and its receiver: the stream of its direction.
      const peer = typeof args.peer === 'number' ? args.peer : undefined;
      const sending = e.name.startsWith('send');
      const me = typeof args.groupRank === 'number' ? args.groupRank : undefined;
      if (peer !== undefined && me === undefined) continue;
      const stream =
        peer === undefined ? commName : sending ? `${commName}|${me}->${peer}` : `${commName}|${peer}->${me}`;
      const key = `${stream}#${args.seq}`;
      let c = calls.get(key);
      if (c === undefined) {
        c = {
          stream,
          group: e.cat.slice(5),
          seq: args.seq as number,
          call: {
            op: peer === undefined ? e.name : 'send',
            dtype: String(args.dtype),
            count: Number(args.count),
            size: peer === undefined ? (typeof args.size === 'number' ? args.size : 0) : 2,
          },
          engine: args.progress === 'engine',
          members: [],
          message: peer !== undefined,
        };
        calls.set(key, c);
      }
      const mine = { rank: e.pid, issueUs: e.ts, endUs, sending: peer !== undefined && sending };
      c.members.push(mine);
      listOf(issued, e.pid).push({ call: c, mine });
    }
  }
  // A message whose send or receive is not in the trace cannot be replayed.
  for (const [key, c] of calls)
    if (c.message && c.members.length !== 2) {
      calls.delete(key);
      for (const m of c.members)
        issued.set(
          m.rank,
          issued.get(m.rank)!.filter((x) => x.call !== c),
        );
    }
  for (const list of issued.values()) list.sort((a, b) => a.mine.issueUs - b.mine.issueUs);
  const busy = unionsOf(busySpans);
  const collecting = unionsOf(collectingSpans);
  const computing = unionsOf(computingSpans);
  const unpriced: Record<string, number> = {};
  const ends = predictEnds([...calls.values()], busy, (call) => {
    const us = priceUs(call);
    if (us === undefined) unpriced[call.op] = (unpriced[call.op] ?? 0) + 1;
    return us;
  });
  const instant = predictEnds([...calls.values()], busy, () => 0);
  const groups = new Map<
    string,
    {
      group: string;
      rank: number;
      waits: number;
      measured: number;
      predicted: number;
      peers: number;
      collections: number;
    }
  >();
  waits.sort((a, b) => a.startUs - b.startUs);
  const sinceWait = new Map<number, number>();
  let otherWaits = 0;
  for (const w of waits) {
    const from = sinceWait.get(w.rank) ?? -Infinity;
    sinceWait.set(w.rank, w.endUs);
    // What the wait waited for: the calls issued since the rank's previous wait that had ended by
    // the wait's end (a call still running after it was not waited for), sends only if they
    // ended during it (a pipeline stage sends and goes on), and none that ended while the rank
    // computed (a tensor-parallel layer's all-reduce, waited for inside its compute span).
    const spans = computing.get(w.rank) ?? [];
    const mineAll = issued.get(w.rank) ?? [];
    const awaited: Call[] = [];
    for (let i = firstWhere(mineAll.length, (j) => mineAll[j].mine.issueUs >= from); i < mineAll.length; i++) {
      const { call, mine } = mineAll[i];
      if (mine.issueUs > w.endUs) break;
      if (mine.endUs > w.endUs + CLOCK_SLACK_US) continue;
      const inside = spans[firstEndingAfter(spans, mine.endUs)];
      if (inside !== undefined && inside[0] < mine.endUs) continue;
      if (!mine.sending || mine.endUs >= w.startUs) awaited.push(call);
    }
    if (awaited.length === 0) {
      otherWaits++;
      continue;
    }
    // The group named is the one whose call ended last in the prediction (measured, where unpriced).
    let last = awaited[0];
    let lastEnd = -Infinity;
    let unpricedCall = false;
    for (const c of awaited) {
      const end = ends.get(c);
      if (end === undefined) unpricedCall = true;
      else if (end > lastEnd) {
        lastEnd = end;
        last = c;
      }
    }
    const measured = w.durUs;
    const seen = afterCollections(collecting.get(w.rank) ?? [], lastEnd);
    const predicted = unpricedCall ? measured : Math.max(0, seen - w.startUs);
    const collections = unpricedCall ? 0 : Math.min(predicted, seen - lastEnd);
    const peers = Math.min(predicted - collections, Math.max(0, ...awaited.map((c) => instant.get(c)! - w.startUs)));
    const key = `${last.group}@${w.rank}`;
    const g = groups.get(key) ?? {
      group: last.group,
      rank: w.rank,
      waits: 0,
      measured: 0,
      predicted: 0,
      peers: 0,
      collections: 0,
    };
    g.waits++;
    g.measured += measured;
    g.predicted += predicted;
    g.peers += peers;
    g.collections += collections;
    groups.set(key, g);
  }
  const all = [...calls.values()];
  const engines = all.filter((c) => c.engine).length;
  const messages = all.filter((c) => c.message).length;
  return {
    progress: engines === 0 ? 'inline' : engines === all.length ? 'engine' : 'mixed',
    ranks: ranks.size,
    calls: all.length - messages,
    messages,
    unpriced,
    otherWaits,
    groups: [...groups.values()]
      .sort((a, b) => a.group.localeCompare(b.group) || a.rank - b.rank)
      .map((g) => ({
        group: g.group,
        rank: g.rank,
        waits: g.waits,
        measuredMs: g.measured / 1000,
        predictedMs: g.predicted / 1000,
        peersMs: g.peers / 1000,
        collectionsMs: g.collections / 1000,
      })),
  };
}

/** A span of a rank's time, [start, end) in us. */
type Span = readonly [number, number];

/** Per rank, its spans merged where they overlap, in order: disjoint, so their ends ascend too. */
function unionsOf(byRank: ReadonlyMap<number, Span[]>): Map<number, Span[]> {
  const unions = new Map<number, Span[]>();
  for (const [rank, spans] of byRank) {
    const union: [number, number][] = [];
    for (const [start, end] of [...spans].sort((a, b) => a[0] - b[0])) {
      const last = union[union.length - 1];
      if (last !== undefined && start < last[1]) last[1] = Math.max(last[1], end);
      else union.push([start, end]);
    }
    unions.set(rank, union);
  }
  return unions;
}

/** The first index below `length` where `holds` is true, for a test false then true along a list (`length` if none). */
function firstWhere(length: number, holds: (i: number) => boolean): number {
  let lo = 0;
  let hi = length;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if (holds(mid)) hi = mid;
    else lo = mid + 1;
  }
  return lo;
}

/** The first of disjoint, ordered spans that ends after `atUs` (spans.length if none). */
function firstEndingAfter(spans: readonly Span[], atUs: number): number {
  return firstWhere(spans.length, (i) => spans[i][1] > atUs);
}

function listOf<T>(map: Map<number, T[]>, key: number): T[] {
  let list = map.get(key);
  if (list === undefined) map.set(key, (list = []));
  return list;
}

/** Each priced call's predicted end (us), in order per stream. */
function predictEnds(
  calls: Call[],
  busy: ReadonlyMap<number, readonly Span[]>,
  price: (call: ReplayCall) => number | undefined,
): Map<Call, number> {
  const ends = new Map<Call, number>();
  const streamFree = new Map<string, number>();
  calls.sort((a, b) => a.stream.localeCompare(b.stream) || a.seq - b.seq);
  for (const c of calls) {
    const call = {
      ...c.call,
      size: c.call.size > 0 ? c.call.size : c.members.length,
      ranks: c.members.map((m) => m.rank).sort((a, b) => a - b),
    };
    const us = price(call);
    const issuedUs = Math.max(...c.members.map((m) => m.issueUs));
    const startUs = Math.max(issuedUs, streamFree.get(c.stream) ?? -Infinity);
    if (us === undefined) continue;
    const endUs = c.engine ? startUs + us : afterFreeTime(startUs, us, c.members, busy);
    ends.set(c, endUs);
    streamFree.set(c.stream, endUs);
  }
  return ends;
}

/** When a thread collecting garbage over `spans` (disjoint, ordered) first sees something that happened at `atUs`. */
function afterCollections(spans: readonly Span[], atUs: number): number {
  let at = atUs;
  for (let i = firstEndingAfter(spans, at); i < spans.length && spans[i][0] <= at; i++) at = spans[i][1];
  return at;
}

/**
 * When `us` of time in which no member computes (or collects garbage) has passed since `fromUs`;
 * `busy` holds each rank's busy spans disjoint and ordered (unionsOf). The members' spans are
 * walked together from the first that ends after `fromUs`, in order of start.
 */
export function afterFreeTime(
  fromUs: number,
  us: number,
  members: readonly { readonly rank: number }[],
  busy: ReadonlyMap<number, readonly Span[]>,
): number {
  const cursors = members.map((m) => {
    const spans = busy.get(m.rank) ?? [];
    return { spans, next: firstEndingAfter(spans, fromUs) };
  });
  let at = fromUs;
  let left = us;
  for (;;) {
    let earliest: (typeof cursors)[number] | undefined;
    for (const c of cursors)
      if (c.next < c.spans.length && (earliest === undefined || c.spans[c.next][0] < earliest.spans[earliest.next][0]))
        earliest = c;
    if (earliest === undefined) return at + left;
    const [start, end] = earliest.spans[earliest.next++];
    if (start > at) {
      const free = start - at;
      if (free >= left) return at + left;
      left -= free;
    }
    at = Math.max(at, end);
  }
}
