import { algorithmNames } from '../algorithms/registry.js';
import { COLLECTIVES, type Collective } from '../algorithms/schedule.js';
import { paramInt, paramString } from '../config/params.js';
import { ONE_SHOT } from '../exec/one-shot.js';
import { invalidArgument } from '../errors.js';
import type { TopologyGraph } from '../topology/topology-graph.js';
import { callCount, machineTimeUs } from '../sim/machine-cost.js';
import { leastWorstRegret, machineStates } from './machine-states.js';

/** 'll': one-shot over the low-latency slots (exec/one-shot.ts); 'simple': the schedule. */
export type Protocol = 'll' | 'simple';

export interface Selection {
  readonly algorithm: string;
  readonly chunkCount: number;
  readonly protocol: Protocol;
}

export interface SelectionRequest {
  readonly collective: Collective;
  readonly nranks: number;
  /** The call's size as the root's input bytes: it must be the same on every rank, or ranks pick different schedules. */
  readonly bytes: number;
  readonly elementBytes: number;
  /** An explicit choice (call option or TSCCL_ALGO); validated, then obeyed. */
  readonly algorithm?: string;
  /** Hosts the ranks span (1 when they share a machine). */
  readonly hostCount?: number;
  /** How ranks reach each other: thread ranks over shared memory, or processes over TCP. */
  readonly transport?: 'shm' | 'tcp';
  /** More rank threads than cores, so every hand-off between ranks is a sleep and a wake-up. */
  readonly oversubscribed?: boolean;
  /**
   * Where the transport has a low-latency protocol: the bytes the call's largest publisher would
   * publish (the same on every rank), and what one publish can carry.
   */
  readonly oneShot?: { readonly bytes: number; readonly capacity: number };
  /**
   * The machine every rank of the call runs on, as the simulator models it (thread ranks: the
   * local topology from the `tsccl tune` profile). With it the cost model ranks the candidates
   * by simulated time; without it (process ranks, several hosts) the measured rules below decide.
   */
  readonly machine?: TopologyGraph;
}

/** Collectives with a hierarchical schedule: worth it when several ranks share each of several hosts. */
const HIERARCHICAL = new Set<Collective>(['allReduce', 'allGather', 'reduceScatter', 'broadcast']);

/**
 * Without a cost model (ranks on several hosts, 2 processes on one): up to this, recursive
 * doubling's log2(n) whole-message exchanges beat splitting the data, as a hand-off costs more
 * than moving 256 KiB (bench/regret.mjs --procs in early sessions, 4 ranks: recursive doubling the
 * fastest at every size from 8 B to 256 KiB; more than 2 processes on one host now have rules of
 * their own, below).
 */
const SMALL_ALL_REDUCE_BYTES = 256 * 1024;
/**
 * Pipelining piece while every rank has a core, between thread ranks and over TCP alike: a
 * hand-off in a stream of pieces costs far more than a flag, so pieces are large. Thread
 * ranks, 2 ranks, 16 MiB all-reduce (bench/chunk-size.mjs, median of 3, out-of-place /
 * in-place): ring 4766 / 4397 us with 512 KiB pieces, 2188 / 1779 with 4 MiB; direct 4037 /
 * 4691 -> 2372 / 1608; reduce-scatter ring 0.65x the time. That is ~80 us per hand-off, of
 * which spinning 5 ms instead of 200 us before sleeping takes back only part (out-of-place
 * 4055-5379 -> 2898-2980, in-place unchanged). Over TCP a hand-off is a trip through two event
 * loops and often a sleep and a wake-up (0.1-1 ms): 2 ranks, all-reduce direct, 8 MiB 7.0-7.2
 * ms with 512 KiB pieces, 4.7-4.8 ms with 4 MiB; 4 ranks 16 MiB 95-98 ms -> 55-66, 64 MiB
 * 347-365 -> 254-267 (all-gather and broadcast send whole blocks and do not change).
 */
const CHUNK_BYTES = paramInt('TSCCL_CHUNK_BYTES', process.env, 1);
/** A default piece of its own, unless TSCCL_CHUNK_BYTES is set: an explicit setting wins everywhere (tests force tiny pieces with it). */
const unlessChunkSet = (bytes: number): number => (process.env.TSCCL_CHUNK_BYTES ? CHUNK_BYTES : bytes);
/**
 * The piece when ranks outnumber cores and a hand-off costs a sleep and a wake-up (~50 us per
 * round on 4 threads of 2 cores): measured on 4 thread ranks, 8 MB all-reduce 2.1 -> 3.7 GB/s,
 * 128 MB 2.2 -> 3.4, all-gather 8 MB 1.3 -> 2.0, when the piece grows from 512 KiB to 16 MiB.
 */
const OVERSUBSCRIBED_CHUNK_BYTES = unlessChunkSet(16 << 20);
/**
 * The piece of an all-reduce between 2 process ranks over TCP: half of CHUNK_BYTES, as measured
 * (why smaller pieces help here is not known; not hand-offs, which smaller pieces add). 2
 * processes on 2 cores, direct all-reduce, three alternating runs, ms out of place / in place:
 * 8 MiB 3.3-3.9 / 2.7-3.0 with 2 MiB pieces against 4.0-4.6 / 3.0-3.9 with 4 MiB, and five more
 * 3.1-3.4 / 3.8-4.8 against 3.9-4.3 / 4.0-5.0; 32 MiB level (15.0-17.9 / 12.0-13.9 against 14.9-16.0 / 12.8-15.2); 128 MiB
 * 43.0-45.6 / 35.1-35.3 against 52.5-57.5 / 47.7-52.5. 1 MiB pieces gained more at 128 MiB
 * (39.9-40.6 / 35.2-36.5) and lost at 8 and 32 MiB. 4 processes on 2 cores lost with 2 MiB
 * (64 MiB 103-106 ms against 93-97), so more ranks keep CHUNK_BYTES, and so do the other
 * collectives (2 processes, two runs: reduce-scatter 64 MiB 17.2-17.9 ms with 2 MiB against
 * 16.2-16.9; all-gather and broadcast level at 8 and 64 MiB). The rule reads only what
 * every rank of the call knows alike: each rank must cut the same pieces.
 */
const TCP_TWO_RANK_CHUNK_BYTES = unlessChunkSet(2 << 20);
/**
 * Process ranks over TCP on one host: the "links" are loopback, bounded by the CPUs and not by a
 * NIC that n-1 copies would share, so all-gathers send directly at every size past the one-shot
 * path. From the tenth session to the fortieth the ring held a band of sizes (at 2 MiB gathered
 * it beat direct 1.17-1.55x in five interleaved regret grids of 4 processes); in the six 4-process
 * timings of the forty-first and forty-second sessions direct won at 1-4 MiB gathered (2 MiB:
 * ring / direct 2081 / 1566, 1819 / 1287, 1687 / 1237, 1727 / 1398, 2298 / 1630, 1933 / 1439 us),
 * and at 256-512 KiB no order held (256 KiB ring / direct 979 / 825, 761 / 804, 447 / 742, 620 /
 * 928, 1194 / 864, 523 / 839).
 */
const TCP_ALL_GATHER = 'direct';
/**
 * Process ranks over TCP on one host: broadcasts of more than 2 processes take the binomial tree
 * below 16 MiB. 4 processes share 2 cores, and the tree's root sends 2 frames where direct's
 * sends 3: with blocks of 20 ms or more (20 calls of a small broadcast made a block of well
 * under 1 ms, and those runs came out either way), two runs, the tree ahead from 8 B to 256 KiB
 * in both (8 B 14-15 / 16-20 us, 4 KiB 20-21 / 31-36, 256 KiB 288-352 / 330-368), and at 16 MiB
 * in all four runs with 5 or 20 ms blocks (1.02-1.08x). Since then, at 16 MiB on 4 processes,
 * direct came out ahead in the three interleaved regret grids of the twenty-third to twenty-fifth
 * sessions (tree / direct, us: 20492 / 18709, 22548 / 18950, 20604 / 15392: 1.10-1.34x), so from
 * there more than 2 processes broadcast directly.
 * Between 2 processes the two send the same one message; direct's root sends before it copies
 * its own output (out of place), the tree's after. Level in the eight interleaved regret grids of
 * the twenty-third to twenty-ninth sessions, but where one fell behind it was mostly the tree:
 * its worst against direct 1.41 (32 KiB: 34 / 24 us), 1.21 (256 KiB), 1.16 (16 MiB); direct's
 * against the tree 1.12, 1.03, 1.13. So 2 processes broadcast directly at every size.
 */
const TCP_BROADCAST = 'binomial_tree';
const TCP_BROADCAST_DIRECT_MIN_BYTES = 16 << 20;
/**
 * Broadcasts of up to 4 KiB among 3 or 4 processes take the ring (a chain): every rank sends at
 * most one message, where the binomial tree's root sends two in turn, and a small message costs
 * its CPU, not its bytes. 4 processes, us, ring / binomial tree, 8 B to 512 B: 10 / 13, 9 / 12,
 * 10 / 12 and 10 / 11, 8 / 12, 10 / 12 (regret grids of the forty-first session), 17 / 22, 18 /
 * 18, 18 / 21 and 9 / 13, 13 / 12, 11 / 13 (bench/crossover.mjs, forty-second); 4 KiB 19 / 22, 17
 * / 16, 26 / 31, 25 / 24. At 32 KiB no order held. A chain's depth grows with the ranks, so more
 * processes keep the tree.
 */
const TCP_BROADCAST_CHAIN_MAX_BYTES = 4096;
const TCP_BROADCAST_CHAIN_MAX_RANKS = 4;
/**
 * Process ranks on 2 ranks: recursive doubling reduces the whole buffer on both ranks, direct
 * half on each; once the reduction weighs (one JS thread per process also serves its socket),
 * direct wins. On one machine, without checksums (out of place / in place, ms, three alternating
 * runs of tsccl bench): 4 MiB RD 2.3-2.5 / 2.5-3.0, direct 1.9-2.1 / 1.9-2.1; 8 MiB RD 5.8-6.3 /
 * 6.3-6.7, direct 3.9-4.3 / 4.9-5.7; at 2 MiB they tie (regret grid: RD 1091 us, direct 1133,
 * ring 1123) and below it the single exchange wins.
 */
const TCP_TWO_RANK_DIRECT_BYTES = 2 << 20;
/**
 * Process ranks over TCP on one host, more than 2: all-reduces above 4 KiB and up to 512 KiB
 * take the tree, larger ones direct. The processes share the cores, so what a call costs is
 * the work of all ranks together more than its steps: the tree (reduce up, broadcast down) sends
 * 2(n-1) messages and reduces n-1 times, recursive doubling n log2 n of each. 4 processes on 2
 * cores, interleaved blocks, us, tree / recursive doubling: regret grids of the forty-first
 * session 127 / 214 and 143 / 181 (32 KiB), 574 / 811 and 562 / 724 (256 KiB), four
 * `--ranks 4 --ops all_reduce` grids the same day 1.26-1.36x; bench/crossover.mjs, three runs
 * of the forty-second, 4 KiB to 256 KiB by 2: the tree at most 1.16x behind (16 KiB, 214 / 185),
 * recursive doubling up to 1.61x (64 KiB, 370 / 594). At 4 KiB recursive doubling came out ahead
 * in the grids (74 / 91, 105 / 113) and level in crossover (129 / 130). Past 512 KiB the whole
 * messages of the tree's 2 log2 n steps weigh more than the work saved (crossover, two runs, us,
 * tree / ring / direct: 512 KiB 880 / 1315 / 2342 and 1036 / 1940 / 2138; 1 MiB 2017 / 2163 /
 * 1801 and 2735 / 2103 / 2330; 2 MiB 3359 / 3746 / 2844 and 4620 / 5176 / 3921), and direct wins
 * from 2 MiB up, as it did in the four regret grids of the last two sessions (2 MiB ring / direct
 * 1.10, 1.10, 1.18, 1.28x).
 */
const TCP_TREE_ABOVE_BYTES = 4096;
const TCP_TREE_MAX_BYTES = 512 * 1024;

/**
 * Process ranks over TCP on one host: the one-shot path (every rank sends its whole message to
 * every peer in one copied frame, exec/one-shot.ts) for the collectives where every rank needs
 * data from every other. It spares the executor's steps, so a call costs less CPU than a
 * schedule's exchange. 2 processes, two runs of 7-9 interleaved blocks of 2000 calls, medians,
 * us, one-shot against the fastest schedule: all-reduce 12.1-15.2 / 13.5-20.1 (8 B), 15.6-18.9 /
 * 18.4-28.1 (512 B), 22.5-24.4 / 23.6-36.3 (2-4 KB); all-gather 17.3-24.7 / 21.7-22.6 (8 B),
 * 15.9-19.2 / 18.9-21.5 (512 B); reduce-scatter 22.7-35.9 / 27.9-42.9 (8 B), 20.5-24.7 /
 * 28.6-29.6 (512 B). With 4 processes on 2 cores it sends 3 frames where recursive doubling
 * sends 2 in turn: all-reduce 242-344 / 184-299 us, so only 2-rank all-reduces take it;
 * all-gather 287-329 / 284-361 and reduce-scatter 297-518 / 256-594 come out level or ahead. A
 * broadcast's peers would all wait for each other (14.5 / 5.5 us at 2 ranks), so rooted
 * collectives keep their schedules. All-to-all (regret grid of the thirty-ninth session, 5
 * blocks, us, one-shot / pairwise / direct): 2 processes 11 / 13 / 13 at 64 B and 512 B, 15 /
 * 14 / 14 at 4 KiB; 4 processes 65 / 102 / 87 at 64 B, 61 / 87 / 72 at 512 B, 77 / 99 / 72 at 4 KiB.
 */
const TCP_ONE_SHOT = new Set<Collective>(['allGather', 'reduceScatter', 'allToAll']);

const PROTOCOL_CHOICES = ['auto', 'll', 'simple'] as const;

/** TSCCL_PROTO, checked once: 'auto' lets the size rule decide. */
function protocolParam(): (typeof PROTOCOL_CHOICES)[number] {
  const value = paramString('TSCCL_PROTO').toLowerCase();
  if (!(PROTOCOL_CHOICES as readonly string[]).includes(value)) {
    throw invalidArgument(`TSCCL_PROTO=${value} must be one of ${PROTOCOL_CHOICES.join(', ')}`, { argument: 'TSCCL_PROTO' });
  }
  return value as (typeof PROTOCOL_CHOICES)[number];
}
const PROTOCOL = protocolParam();

/** Can the one-shot path run this call at all (a transport with slots, a message that fits)? */
function oneShotFits(request: SelectionRequest): boolean {
  return request.oneShot !== undefined && request.oneShot.bytes <= request.oneShot.capacity;
}

/** Names a call may force: the collective's schedules, and the one-shot path. */
export function selectableAlgorithms(collective: Collective): string[] {
  return [...algorithmNames(collective), ONE_SHOT];
}

/**
 * Every way of forcing an algorithm (the call option, TSCCL_ALGO, `bench --algo`) refuses an
 * unknown name with this one error; `argument` says where the name came from, `op` how the
 * caller spells the collective.
 */
export function checkSelectable(collective: Collective, algorithm: string, where: { argument: string; op?: string }): void {
  const valid = selectableAlgorithms(collective);
  if (!valid.includes(algorithm)) {
    throw invalidArgument(`${where.argument} '${algorithm}' is not available for ${where.op ?? collective}: expected one of ${valid.join(', ')}`,
      { argument: where.argument, op: collective });
  }
}

/** The pipelining piece of a call, in elements: the same on every rank of it. */
function chunkCountOf(request: Pick<SelectionRequest, 'collective' | 'nranks' | 'elementBytes' | 'transport' | 'oversubscribed'>): number {
  const chunkBytes = request.oversubscribed ? OVERSUBSCRIBED_CHUNK_BYTES
    : request.transport === 'tcp' && request.nranks === 2 && request.collective === 'allReduce' ? TCP_TWO_RANK_CHUNK_BYTES : CHUNK_BYTES;
  return Math.max(1, Math.floor(chunkBytes / request.elementBytes));
}

/**
 * The one place that decides which algorithm runs and how it is chunked. Where the call's
 * machine is modelled (thread ranks), the cost model picks: every valid algorithm, and the
 * one-shot path where it fits, simulated on it, the fastest chosen. Elsewhere, size rules
 * measured with bench/regret.mjs.
 */
export function selectAlgorithm(request: SelectionRequest): Selection {
  const chunkCount = chunkCountOf(request);
  if (request.algorithm !== undefined) {
    if (request.algorithm === ONE_SHOT) {
      if (!oneShotFits(request)) {
        throw invalidArgument(`Algorithm '${ONE_SHOT}' needs a transport with a low-latency path (thread ranks, or process ranks over TCP alone) and a message of at most `
          + `${request.oneShot?.capacity ?? 0} bytes; this ${request.collective} has ${request.oneShot?.bytes ?? request.bytes}`, { argument: 'algorithm', op: request.collective });
      }
      return { algorithm: ONE_SHOT, chunkCount, protocol: 'll' };
    }
    checkSelectable(request.collective, request.algorithm, { argument: 'algorithm' });
    return { algorithm: request.algorithm, chunkCount, protocol: 'simple' };
  }
  const oneShot = PROTOCOL !== 'simple' && oneShotFits(request);
  if (oneShot && PROTOCOL === 'll') return { algorithm: ONE_SHOT, chunkCount, protocol: 'll' };
  const hosts = request.hostCount ?? 1;
  const onOneHostOverTcp = request.transport === 'tcp' && hosts === 1;
  if (oneShot && onOneHostOverTcp
    && (TCP_ONE_SHOT.has(request.collective) || (request.collective === 'allReduce' && request.nranks === 2))) {
    return { algorithm: ONE_SHOT, chunkCount, protocol: 'll' };
  }
  if (request.machine !== undefined && hosts === 1) {
    const algorithm = fastestOn(request.machine, request, chunkCount, oneShot);
    return { algorithm, chunkCount, protocol: algorithm === ONE_SHOT ? 'll' : 'simple' };
  }
  if (HIERARCHICAL.has(request.collective) && hosts > 1 && hosts < request.nranks) {
    // One stream per host across the network instead of one per rank.
    return { algorithm: 'hierarchical', chunkCount, protocol: 'simple' };
  }
  if (onOneHostOverTcp && request.collective === 'broadcast') {
    const direct = request.nranks === 2 || request.bytes >= TCP_BROADCAST_DIRECT_MIN_BYTES;
    const chain = request.nranks <= TCP_BROADCAST_CHAIN_MAX_RANKS && request.bytes <= TCP_BROADCAST_CHAIN_MAX_BYTES;
    return { algorithm: direct ? 'direct' : chain ? 'ring' : TCP_BROADCAST, chunkCount, protocol: 'simple' };
  }
  if (onOneHostOverTcp && request.collective === 'allGather') return { algorithm: TCP_ALL_GATHER, chunkCount, protocol: 'simple' };
  if (request.collective === 'allReduce') {
    if (onOneHostOverTcp && request.nranks > 2 && request.bytes > TCP_TREE_ABOVE_BYTES) {
      return { algorithm: request.bytes <= TCP_TREE_MAX_BYTES ? 'tree' : 'direct', chunkCount, protocol: 'simple' };
    }
    // On 2 ranks recursive doubling is one exchange of the whole buffer, and direct two phases
    // moving the same bytes; over TCP the latter wins once halving the reduction outweighs a phase.
    const twoRankExchange = request.nranks === 2 && !(request.transport === 'tcp' && request.bytes > TCP_TWO_RANK_DIRECT_BYTES);
    const algorithm = request.bytes <= SMALL_ALL_REDUCE_BYTES || twoRankExchange ? 'recursive_doubling' : 'direct';
    return { algorithm, chunkCount, protocol: 'simple' };
  }
  return { algorithm: algorithmNames(request.collective)[0], chunkCount, protocol: 'simple' };
}

/** Choices made, per machine: the same call size is ranked once. */
const choices = new WeakMap<TopologyGraph, Map<string, string>>();
const CHOICE_LIMIT = 4096;

/**
 * The candidate the cost model predicts fastest on the machine (every schedule but the
 * hierarchical ones, which need several hosts, and the one-shot path where offered), ties to the
 * earlier one; where the machine was measured in two states, the one that loses least to the
 * fastest in either (machine-states.ts). Calls are ranked by size class (the bytes rounded up to
 * a power of two), so a job with many sizes simulates a few dozen classes, not every size; every
 * rank ranks the same class the same way. A known class costs a lookup: this runs on every call, small ones included.
 */
function fastestOn(machine: TopologyGraph, request: Pick<SelectionRequest, 'collective' | 'nranks' | 'bytes' | 'elementBytes'>, chunkCount: number, oneShot: boolean): string {
  const sizeClass = 2 ** Math.ceil(Math.log2(Math.max(request.bytes, request.elementBytes)));
  const key = `${request.collective}|${sizeClass}|${request.elementBytes}|${chunkCount}|${oneShot}`;
  let known = choices.get(machine);
  if (known === undefined) choices.set(machine, known = new Map());
  let best = known.get(key);
  if (best === undefined) {
    const candidates = [...algorithmNames(request.collective).filter((a) => a !== 'hierarchical'), ...(oneShot ? [ONE_SHOT] : [])];
    best = candidates[0];
    if (candidates.length > 1 && request.nranks > 1) {
      const count = Math.max(1, callCount(request.collective, sizeClass, request.elementBytes, request.nranks));
      const times = machineStates(machine).map((state) => candidates.map((algorithm) =>
        machineTimeUs(state, { collective: request.collective, count, elementBytes: request.elementBytes, algorithm, chunkCount })));
      best = candidates[leastWorstRegret(times)];
    }
    if (known.size >= CHOICE_LIMIT) known.clear();
    known.set(key, best);
  }
  return best;
}

/**
 * What a communicator of thread ranks ranks when it is created: the size classes of the latency
 * range (a call costs microseconds there, and ranking its class inside it would cost it
 * milliseconds), for float32, the element size most calls use, with the one-shot path offered
 * as an ordinary call offers it. Each class costs a few simulations (docs/tuning.md: the whole
 * range for every element size and both offers took seconds per rank); other keys are ranked on
 * their first call, the same on every rank.
 */
export const PREPARED_MAX_BYTES = 64 * 1024;
const PREPARED_ELEMENT_BYTES = 4;

export interface PrepareRequest {
  readonly nranks: number;
  readonly transport: 'shm' | 'tcp';
  readonly oversubscribed: boolean;
  /** The transport has a low-latency path, so a small call is offered the one-shot path. */
  readonly oneShot: boolean;
}

/** Ranks the size classes PREPARED_MAX_BYTES covers on the machine, as selectAlgorithm would on a call. */
export function prepareChoices(machine: TopologyGraph, request: PrepareRequest): void {
  if (request.nranks < 2) return;
  const elementBytes = PREPARED_ELEMENT_BYTES;
  const oneShot = PROTOCOL !== 'simple' && request.oneShot;
  for (const collective of COLLECTIVES) {
    const chunkCount = chunkCountOf({ ...request, collective, elementBytes });
    for (let bytes = elementBytes; bytes <= PREPARED_MAX_BYTES; bytes *= 2) {
      fastestOn(machine, { collective, nranks: request.nranks, bytes, elementBytes }, chunkCount, oneShot);
    }
  }
}

/**
 * Parses NCCL-style overrides, `allreduce:ring;broadcast:binomial_tree`: collective names are
 * matched without case or punctuation, so `all_reduce` and `allReduce` both work.
 */
export function parseAlgorithmOverrides(text: string | undefined): Map<Collective, string> {
  const overrides = new Map<Collective, string>();
  if (text === undefined || text.trim() === '') return overrides;
  const normalize = (s: string) => s.toLowerCase().replace(/[^a-z]/g, '');
  const known = new Map<string, Collective>(COLLECTIVES.map((c) => [normalize(c), c]));
  for (const part of text.split(';')) {
    if (part.trim() === '') continue;
    const [name, algorithm] = part.split(':').map((s) => s.trim());
    const collective = known.get(normalize(name ?? ''));
    if (collective === undefined || !algorithm) {
      throw invalidArgument(`TSCCL_ALGO entry '${part}' must be <collective>:<algorithm>, e.g. allreduce:ring`, { argument: 'TSCCL_ALGO' });
    }
    checkSelectable(collective, algorithm, { argument: 'TSCCL_ALGO' });
    overrides.set(collective, algorithm);
  }
  return overrides;
}
