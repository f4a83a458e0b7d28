import { algorithmNames } from '../algorithms/registry.js';
import { COLLECTIVES, type Collective } from '../algorithms/schedule.js';
import { paramInt } from '../config/params.js';
import { invalidArgument } from '../errors.js';

export interface Selection {
  readonly algorithm: string;
  readonly chunkCount: number;
}

export interface SelectionRequest {
  readonly collective: Collective;
  readonly nranks: number;
  readonly bytes: number;
  readonly elementBytes: number;
  /** An explicit choice (call option or TSCCL_ALGO); validated, then obeyed. */
  readonly algorithm?: string;
  /** Hosts the ranks span (1 when they share a machine). */
  readonly hostCount?: number;
}

/** Collectives with a hierarchical schedule: worth it when several ranks share each of several hosts. */
const HIERARCHICAL = new Set<Collective>(['allReduce', 'allGather', 'reduceScatter', 'broadcast']);

/**
 * Up to this, recursive doubling's log2(n) whole-message exchanges beat splitting the data:
 * on thread ranks a hand-off costs far more than moving 256 KiB (bench/regret.mjs, 4 and 8
 * ranks: recursive doubling 1.5-3.9x faster than direct at 32 KiB and 256 KiB, slower at 2 MiB).
 */
const SMALL_ALL_REDUCE_BYTES = 256 * 1024;
/** Pipelining piece: large enough to amortise a hand-off, small enough to overlap tree hops. */
const CHUNK_BYTES = Math.max(1, paramInt('TSCCL_CHUNK_BYTES'));

/**
 * The one place that decides which algorithm runs and how it is chunked. For now a size rule
 * for shared memory; the cost model over a topology replaces the rule without moving it.
 */
export function selectAlgorithm(request: SelectionRequest): Selection {
  const chunkCount = Math.max(1, Math.floor(CHUNK_BYTES / request.elementBytes));
  const names = algorithmNames(request.collective);
  if (request.algorithm !== undefined) {
    if (!names.includes(request.algorithm)) {
      throw invalidArgument(
        `Algorithm '${request.algorithm}' is not available for ${request.collective}: expected one of ${names.join(', ')}`,
        { argument: 'algorithm', op: request.collective });
    }
    return { algorithm: request.algorithm, chunkCount };
  }
  const hosts = request.hostCount ?? 1;
  if (HIERARCHICAL.has(request.collective) && hosts > 1 && hosts < request.nranks) {
    // One stream per host across the network instead of one per rank.
    return { algorithm: 'hierarchical', chunkCount };
  }
  if (request.collective === 'allReduce') {
    // On 2 ranks recursive doubling is one exchange of the whole buffer, and direct two phases
    // moving the same bytes: the alpha-beta model and bench/regret.mjs both prefer the former.
    const algorithm = request.bytes <= SMALL_ALL_REDUCE_BYTES || request.nranks === 2 ? 'recursive_doubling' : 'direct';
    return { algorithm, chunkCount };
  }
  return { algorithm: names[0], chunkCount };
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
    if (!algorithmNames(collective).includes(algorithm)) {
      throw invalidArgument(
        `TSCCL_ALGO names '${algorithm}' for ${collective}: expected one of ${algorithmNames(collective).join(', ')}`,
        { argument: 'TSCCL_ALGO' });
    }
    overrides.set(collective, algorithm);
  }
  return overrides;
}
