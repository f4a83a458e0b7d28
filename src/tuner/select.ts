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
  /** The call's input is its output: where that changes a schedule's steps, the cost model ranks the in-place candidates. */
  readonly inPlace?: boolean;
}

/**
 * Collectives with a schedule that runs other steps in place (recursive doubling's copy back
 * from scratch, a direct all-gather or broadcast that skips its own block, all-to-all's
 * staging): their in-place calls are ranked apart. Elsewhere every candidate runs the same
 * steps either way, and an in-place call takes the out-of-place ranking.
 */
const RANKED_IN_PLACE = new Set<Collective>(['allReduce', 'allGather', 'broadcast', 'allToAll']);
const rankedInPlace = (collective: Collective, inPlace: boolean | undefined): boolean =>
  inPlace === true && RANKED_IN_PLACE.has(collective);

/** Collectives with a hierarchical schedule: worth it when several ranks share each of several hosts. */
const HIERARCHICAL = new Set<Collective>(['allReduce', 'allGather', 'reduceScatter', 'broadcast']);

/**
 * Without a cost model (ranks on several hosts, 2 processes on one): up to this, recursive
 * doubling's log2(n) whole-message exchanges beat splitting the data, as a hand-off costs more
 * than moving 256 KiB (docs/tuning.md).
 */
const SMALL_ALL_REDUCE_BYTES = 256 * 1024;
/**
 * Pipelining piece while every rank has a core, between thread ranks and over TCP alike: a
 * hand-off in a stream of pieces costs far more than a flag, so pieces are large (docs/tuning.md).
 */
const CHUNK_BYTES = paramInt('TSCCL_CHUNK_BYTES', process.env, 1);
/** A default piece of its own, unless TSCCL_CHUNK_BYTES is set: an explicit setting wins everywhere (tests force tiny pieces with it). */
const unlessChunkSet = (bytes: number): number => (process.env.TSCCL_CHUNK_BYTES ? CHUNK_BYTES : bytes);
/** The piece when ranks outnumber cores and every hand-off is a sleep and a wake-up: fewer, larger pieces (docs/tuning.md). */
const OVERSUBSCRIBED_CHUNK_BYTES = unlessChunkSet(16 << 20);
/**
 * The piece of an all-reduce between 2 process ranks over TCP: half of CHUNK_BYTES, as measured
 * (why smaller pieces help here is not known; docs/tuning.md). The rule reads only what every
 * rank of the call knows alike: each rank must cut the same pieces.
 */
const TCP_TWO_RANK_CHUNK_BYTES = unlessChunkSet(2 << 20);
/**
 * Process ranks over TCP on one host: the "links" are loopback, bounded by the CPUs and not by a
 * NIC that n-1 copies would share, so all-gathers send directly at every size past the one-shot
 * path (docs/tuning.md).
 */
const TCP_ALL_GATHER = 'direct';
/**
 * Process ranks over TCP on one host: broadcasts of more than 2 processes take the binomial tree
 * below 16 MiB (4 processes on 2 cores: the tree's root sends 2 frames where direct's sends 3),
 * directly from there; 2 processes broadcast directly at every size (docs/tuning.md).
 */
const TCP_BROADCAST = 'binomial_tree';
const TCP_BROADCAST_DIRECT_MIN_BYTES = 16 << 20;
/**
 * Broadcasts of up to 4 KiB among 3 or 4 processes take the ring (a chain): every rank sends at
 * most one message, where the binomial tree's root sends two in turn, and a small message costs
 * its CPU, not its bytes. A chain's depth grows with the ranks, so more processes keep the tree
 * (docs/tuning.md).
 */
const TCP_BROADCAST_CHAIN_MAX_BYTES = 4096;
const TCP_BROADCAST_CHAIN_MAX_RANKS = 4;
/**
 * Process ranks on 2 ranks: recursive doubling reduces the whole buffer on both ranks, direct
 * half on each; once the reduction weighs (one JS thread per process also serves its socket),
 * direct wins (docs/tuning.md).
 */
const TCP_TWO_RANK_DIRECT_BYTES = 2 << 20;
/**
 * Process ranks over TCP on one host, more than 2: all-reduces above 4 KiB and up to 512 KiB
 * take the tree, larger ones direct. The processes share the cores, so what a call costs is the
 * work of all ranks together more than its steps: the tree sends 2(n-1) messages and reduces n-1
 * times, recursive doubling n log2 n of each; past 512 KiB the tree's whole messages weigh more
 * than the work saved (docs/tuning.md).
 */
const TCP_TREE_ABOVE_BYTES = 4096;
const TCP_TREE_MAX_BYTES = 512 * 1024;

/**
 * Process ranks over TCP on one host: the one-shot path (every rank sends its whole message to
 * every peer in one copied frame, exec/one-shot.ts) for the collectives where every rank needs
 * data from every other. It spares the executor's steps, so a call costs less CPU than a
 * schedule's exchange; all-reduces take it on 2 ranks only (4 processes on 2 cores: 3 frames
 * against recursive doubling's 2 in turn), and rooted collectives keep their schedules, as a
 * broadcast's peers would all wait for each other (docs/tuning.md).
 */
const TCP_ONE_SHOT = new Set<Collective>(['allGather', 'reduceScatter', 'allToAll']);

const PROTOCOL_CHOICES = ['auto', 'll', 'simple'] as const;

/** TSCCL_PROTO, checked once: 'auto' lets the size rule decide. */
function protocolParam(): (typeof PROTOCOL_CHOICES)[number] {
  const value = paramString('TSCCL_PROTO').toLowerCase();
  if (!(PROTOCOL_CHOICES as readonly string[]).includes(value)) {
    throw invalidArgument(`TSCCL_PROTO=${value} must be one of ${PROTOCOL_CHOICES.join(', ')}`, {
      argument: 'TSCCL_PROTO',
    });
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
export function checkSelectable(
  collective: Collective,
  algorithm: string,
  where: { argument: string; op?: string },
): void {
  const valid = selectableAlgorithms(collective);
  if (!valid.includes(algorithm)) {
    throw invalidArgument(
      `${where.argument} '${algorithm}' is not available for ${where.op ?? collective}: expected one of ${valid.join(', ')}`,
      { argument: where.argument, op: collective },
    );
  }
}

/** The pipelining piece of a call in bytes, before it is cut to whole elements. */
function chunkBytesOf(
  request: Pick<SelectionRequest, 'collective' | 'nranks' | 'transport' | 'oversubscribed'>,
): number {
  return request.oversubscribed
    ? OVERSUBSCRIBED_CHUNK_BYTES
    : request.transport === 'tcp' && request.nranks === 2 && request.collective === 'allReduce'
      ? TCP_TWO_RANK_CHUNK_BYTES
      : CHUNK_BYTES;
}

/** The pipelining piece of a call, in elements: the same on every rank of it. */
function chunkCountOf(
  request: Pick<SelectionRequest, 'collective' | 'nranks' | 'elementBytes' | 'transport' | 'oversubscribed'>,
): number {
  return Math.max(1, Math.floor(chunkBytesOf(request) / request.elementBytes));
}

/**
 * The one place that decides which algorithm runs and how it is chunked. Where the call's
 * machine is modelled (thread ranks), the cost model picks: every valid algorithm, and the
 * one-shot path where it fits, simulated on it, the fastest chosen. Elsewhere, size rules
 * measured with bench/regret.mjs (docs/tuning.md).
 */
export function selectAlgorithm(request: SelectionRequest): Selection {
  const chunkCount = chunkCountOf(request);
  if (request.algorithm !== undefined) {
    if (request.algorithm === ONE_SHOT) {
      if (!oneShotFits(request)) {
        throw invalidArgument(
          `Algorithm '${ONE_SHOT}' needs a transport with a low-latency path (thread ranks, or process ranks over TCP alone) and a message of at most ` +
            `${request.oneShot?.capacity ?? 0} bytes; this ${request.collective} has ${request.oneShot?.bytes ?? request.bytes}`,
          { argument: 'algorithm', op: request.collective },
        );
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
  if (
    oneShot &&
    onOneHostOverTcp &&
    (TCP_ONE_SHOT.has(request.collective) || (request.collective === 'allReduce' && request.nranks === 2))
  ) {
    return { algorithm: ONE_SHOT, chunkCount, protocol: 'll' };
  }
  if (request.machine !== undefined && hosts === 1) {
    const algorithm = fastestOn(request.machine, request, chunkBytesOf(request), oneShot);
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
  if (onOneHostOverTcp && request.collective === 'allGather')
    return { algorithm: TCP_ALL_GATHER, chunkCount, protocol: 'simple' };
  if (request.collective === 'allReduce') {
    if (onOneHostOverTcp && request.nranks > 2 && request.bytes > TCP_TREE_ABOVE_BYTES) {
      return { algorithm: request.bytes <= TCP_TREE_MAX_BYTES ? 'tree' : 'direct', chunkCount, protocol: 'simple' };
    }
    // On 2 ranks recursive doubling is one exchange of the whole buffer, and direct two phases
    // moving the same bytes; over TCP the latter wins once halving the reduction outweighs a phase.
    const twoRankExchange =
      request.nranks === 2 && !(request.transport === 'tcp' && request.bytes > TCP_TWO_RANK_DIRECT_BYTES);
    const algorithm = request.bytes <= SMALL_ALL_REDUCE_BYTES || twoRankExchange ? 'recursive_doubling' : 'direct';
    return { algorithm, chunkCount, protocol: 'simple' };
  }
  return { algorithm: algorithmNames(request.collective)[0], chunkCount, protocol: 'simple' };
}

/** Choices made, per machine: the same call size is ranked once. */
const choices = new WeakMap<TopologyGraph, Map<string, string>>();
/** Far above what one machine's prepared table holds (collectives x 41 classes x 2 offers). */
const CHOICE_LIMIT = 4096;

/**
 * The candidate the cost model predicts fastest on the machine (every schedule but the
 * hierarchical ones, which need several hosts, and the one-shot path where offered), ties to the
 * earlier one; where the machine was measured in two states, the one that loses least to the
 * fastest in either (machine-states.ts). Calls are ranked by size class (the bytes rounded up to
 * a power of two) whatever their element type: the model prices bytes, so a class is simulated
 * once, in bytes, and every rank ranks it the same way. A known class costs a lookup: this runs
 * on every call, small ones included.
 */
function fastestOn(
  machine: TopologyGraph,
  request: Pick<SelectionRequest, 'collective' | 'nranks' | 'bytes' | 'inPlace'>,
  chunkBytes: number,
  oneShot: boolean,
): string {
  const sizeClass = sizeClassOf(request.bytes);
  const known = knownChoices(machine);
  const inPlace = rankedInPlace(request.collective, request.inPlace);
  const key = choiceKey(request.collective, sizeClass, chunkBytes, oneShot, inPlace);
  let best = known.get(key);
  if (best === undefined) {
    rankedOnDemand++;
    [best] = rankClass(machine, { ...request, sizeClass, inPlace }, chunkBytes, [oneShot]);
    if (known.size >= CHOICE_LIMIT) known.clear();
    known.set(key, best);
  }
  return best;
}

function knownChoices(machine: TopologyGraph): Map<string, string> {
  let known = choices.get(machine);
  if (known === undefined) choices.set(machine, (known = new Map()));
  return known;
}

const choiceKey = (
  collective: Collective,
  sizeClass: number,
  chunkBytes: number,
  oneShot: boolean,
  inPlace: boolean,
): string => `${collective}|${sizeClass}|${chunkBytes}|${oneShot}${inPlace ? '|in place' : ''}`;

/** The power of two a call's bytes round up to: the tuner's unit of choice. */
function sizeClassOf(bytes: number): number {
  return 2 ** Math.ceil(Math.log2(Math.max(bytes, 1)));
}

/**
 * Simulates every candidate on a class of bytes (one-byte elements, pieces of chunkBytes) and
 * picks one for each offer of the one-shot path: the schedules' times serve both offers.
 */
function rankClass(
  machine: TopologyGraph,
  request: Pick<SelectionRequest, 'collective' | 'nranks'> & { readonly sizeClass: number; readonly inPlace: boolean },
  chunkBytes: number,
  offers: readonly boolean[],
): string[] {
  const schedules = algorithmNames(request.collective).filter((a) => a !== 'hierarchical');
  const candidates = offers.includes(true) ? [...schedules, ONE_SHOT] : schedules;
  if (candidates.length === 1 || request.nranks === 1) return offers.map(() => candidates[0]);
  const count = Math.max(1, callCount(request.collective, request.sizeClass, 1, request.nranks));
  const times = machineStates(machine).map((state) =>
    candidates.map((algorithm) =>
      machineTimeUs(state, {
        collective: request.collective,
        count,
        elementBytes: 1,
        algorithm,
        chunkCount: chunkBytes,
        inPlace: request.inPlace,
      }),
    ),
  );
  return offers.map((oneShot) => {
    const offered = oneShot ? candidates.length : schedules.length;
    return candidates[offered === 1 ? 0 : leastWorstRegret(times.map((state) => state.slice(0, offered)))];
  });
}

/** Classes ranked inside a call because no communicator prepared them (tests assert it stays 0 on thread ranks). */
let rankedOnDemand = 0;
export function classesRankedOnDemand(): number {
  return rankedOnDemand;
}

/**
 * The largest class a communicator ranks when it is created: a call of more than 2^40 bytes
 * (1 TiB) cannot be allocated, and past the machine's last cache tier every class reuses the
 * same stand-in simulations (sim/machine-cost.ts), so the top classes cost little.
 */
const PREPARED_MAX_CLASS = 2 ** 40;

export interface PrepareRequest {
  readonly nranks: number;
  readonly transport: 'shm' | 'tcp';
  readonly oversubscribed: boolean;
  /** What one low-latency message holds, where the transport has the one-shot path. */
  readonly oneShotCapacity?: number;
}

/**
 * Ranks every size class a call of the communicator can have, with and without the one-shot
 * path where it could fit, as selectAlgorithm would on a call: so no call of thread ranks runs
 * the cost model. A call's one-shot message is at least its bytes over the ranks, so past
 * twice the capacity times the ranks no class is offered the one-shot path.
 */
export function prepareChoices(machine: TopologyGraph, request: PrepareRequest): void {
  if (request.nranks < 2) return;
  const capacity = PROTOCOL === 'simple' ? 0 : (request.oneShotCapacity ?? 0);
  const known = knownChoices(machine);
  for (const collective of COLLECTIVES) {
    const chunkBytes = chunkBytesOf({ ...request, collective });
    for (const inPlace of RANKED_IN_PLACE.has(collective) ? [false, true] : [false])
      for (let sizeClass = 1; sizeClass <= PREPARED_MAX_CLASS; sizeClass *= 2) {
        const offers = (sizeClass < 2 * capacity * request.nranks ? [false, true] : [false]).filter(
          (oneShot) => !known.has(choiceKey(collective, sizeClass, chunkBytes, oneShot, inPlace)),
        );
        if (offers.length === 0) continue;
        const picks = rankClass(
          machine,
          { collective, nranks: request.nranks, sizeClass, inPlace },
          chunkBytes,
          offers,
        );
        for (const [i, oneShot] of offers.entries())
          known.set(choiceKey(collective, sizeClass, chunkBytes, oneShot, inPlace), picks[i]);
      }
  }
}

/** A machine's ranked classes as one thread hands them to others: valid only on the same machine. */
export interface ChoiceTable {
  /** The machine's topology as JSON: a table ranked on another machine is not adopted. */
  readonly machine: string;
  readonly entries: readonly (readonly [string, string])[];
}

const machineJson = new WeakMap<TopologyGraph, string>();
function machineIdentity(machine: TopologyGraph): string {
  let json = machineJson.get(machine);
  if (json === undefined) machineJson.set(machine, (json = JSON.stringify(machine.topology)));
  return json;
}

/** What has been ranked on the machine, to hand to threads that model the same machine. */
export function choiceTable(machine: TopologyGraph): ChoiceTable {
  return { machine: machineIdentity(machine), entries: [...knownChoices(machine)] };
}

/** Takes another thread's ranked classes where they were ranked on this same machine; says whether it did. */
export function adoptChoices(machine: TopologyGraph, table: ChoiceTable): boolean {
  if (table.machine !== machineIdentity(machine)) return false;
  const known = knownChoices(machine);
  for (const [key, algorithm] of table.entries) known.set(key, algorithm);
  return true;
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
      throw invalidArgument(`TSCCL_ALGO entry '${part}' must be <collective>:<algorithm>, e.g. allreduce:ring`, {
        argument: 'TSCCL_ALGO',
      });
    }
    checkSelectable(collective, algorithm, { argument: 'TSCCL_ALGO' });
    overrides.set(collective, algorithm);
  }
  return overrides;
}
