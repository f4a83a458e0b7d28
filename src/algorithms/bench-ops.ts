import type { Collective } from './schedule.js';
import { invalidArgument } from '../errors.js';

/**
 * The operations `tsccl bench` measures, with nccl-tests' conventions (its PERFORMANCE.md and
 * *_GetCollByteCount): the size a row prints, the per-rank count it prints, the bytes algbw is
 * computed on, and the factor from algbw to busbw that makes rows comparable to link speed.
 */
export const BENCH_OP_NAMES = [
  'all_reduce',
  'all_gather',
  'reduce_scatter',
  'broadcast',
  'reduce',
  'alltoall',
  'gather',
  'scatter',
  'sendrecv',
] as const;
export type BenchOpName = (typeof BENCH_OP_NAMES)[number];

export interface BenchCounts {
  /** Elements each rank sends (its input). */
  readonly send: number;
  /** Elements each rank receives (its output). */
  readonly recv: number;
  /** The count a row prints: per-rank for gathers and scatters, as nccl-tests does. */
  readonly param: number;
  /** Elements algbw is computed on. */
  readonly algorithm: number;
}

export interface BenchOp {
  readonly name: BenchOpName;
  /** The collective the op measures; sendrecv is point-to-point and has none. */
  readonly collective: Collective | undefined;
  readonly reduces: boolean;
  readonly rooted: boolean;
  counts(total: number, nranks: number): BenchCounts;
  busFactor(nranks: number): number;
}

// nccl-tests keeps per-rank blocks a multiple of 4 elements.
const perRank = (total: number, n: number) => Math.floor(total / (4 * n)) * 4;
const whole = (total: number): BenchCounts => ({ send: total, recv: total, param: total, algorithm: total });
const gathering = (total: number, n: number): BenchCounts => {
  const b = perRank(total, n);
  return { send: b, recv: b * n, param: b, algorithm: b * n };
};
const scattering = (total: number, n: number): BenchCounts => {
  const b = perRank(total, n);
  return { send: b * n, recv: b, param: b, algorithm: b * n };
};
const spread = (n: number) => (n - 1) / n;
const one = () => 1;

export const BENCH_OPS: Readonly<Record<BenchOpName, BenchOp>> = {
  all_reduce: {
    name: 'all_reduce',
    collective: 'allReduce',
    reduces: true,
    rooted: false,
    counts: whole,
    busFactor: (n) => (2 * (n - 1)) / n,
  },
  all_gather: {
    name: 'all_gather',
    collective: 'allGather',
    reduces: false,
    rooted: false,
    counts: gathering,
    busFactor: spread,
  },
  reduce_scatter: {
    name: 'reduce_scatter',
    collective: 'reduceScatter',
    reduces: true,
    rooted: false,
    counts: scattering,
    busFactor: spread,
  },
  broadcast: {
    name: 'broadcast',
    collective: 'broadcast',
    reduces: false,
    rooted: true,
    counts: whole,
    busFactor: one,
  },
  reduce: { name: 'reduce', collective: 'reduce', reduces: true, rooted: true, counts: whole, busFactor: one },
  alltoall: {
    name: 'alltoall',
    collective: 'allToAll',
    reduces: false,
    rooted: false,
    busFactor: spread,
    counts: (total, n) => {
      const b = perRank(total, n);
      return { send: b * n, recv: b * n, param: b, algorithm: b * n };
    },
  },
  gather: { name: 'gather', collective: 'gather', reduces: false, rooted: true, counts: gathering, busFactor: spread },
  scatter: {
    name: 'scatter',
    collective: 'scatter',
    reduces: false,
    rooted: true,
    counts: scattering,
    busFactor: spread,
  },
  sendrecv: { name: 'sendrecv', collective: undefined, reduces: false, rooted: false, counts: whole, busFactor: one },
};

/**
 * Whether the op has an in-place form (its input is its output): every collective does; a
 * sendrecv does not, as a rank cannot send from and receive into one buffer at once.
 */
export function hasInPlace(op: BenchOp): boolean {
  return op.collective !== undefined;
}

export function benchOp(name: string): BenchOp {
  const normalized = name.replace(/-/g, '_').toLowerCase();
  const aliases: Record<string, BenchOpName> = {
    allreduce: 'all_reduce',
    allgather: 'all_gather',
    reducescatter: 'reduce_scatter',
    all_to_all: 'alltoall',
    send_recv: 'sendrecv',
  };
  const resolved = (BENCH_OP_NAMES as readonly string[]).includes(normalized)
    ? (normalized as BenchOpName)
    : aliases[normalized];
  if (resolved === undefined)
    throw invalidArgument(`Unknown bench op '${name}': expected one of ${BENCH_OP_NAMES.join(', ')}`, {
      argument: 'op',
    });
  return BENCH_OPS[resolved];
}

/** Parses nccl-tests sizes: 8, 64K, 64M, 1G (powers of 1024). */
export function parseSize(text: string, argument: string): number {
  const match = /^(\d+(?:\.\d+)?)\s*([kKmMgG]?)[bB]?$/.exec(String(text).trim());
  if (match === null)
    throw invalidArgument(`${argument} '${text}' is not a size: expected bytes like 8, 64K, 64M or 1G`, { argument });
  const scale = { '': 1, k: 1024, m: 1024 ** 2, g: 1024 ** 3 }[match[2].toLowerCase() as '' | 'k' | 'm' | 'g'];
  return Math.floor(Number(match[1]) * scale);
}

/** The sizes of a sweep: from min to max, multiplying by factor (or adding step when factor is 1). */
export function sweepSizes(minBytes: number, maxBytes: number, factor: number, stepBytes: number): number[] {
  if (!(minBytes >= 0) || !(maxBytes >= minBytes))
    throw invalidArgument(`-b ${minBytes} must be at most -e ${maxBytes}`, { argument: 'minbytes' });
  if (!(factor >= 1)) throw invalidArgument(`-f ${factor} must be at least 1`, { argument: 'stepfactor' });
  const sizes: number[] = [];
  for (let size = minBytes; size <= maxBytes; ) {
    sizes.push(size);
    const next = factor > 1 ? Math.max(size * factor, size + 1) : size + stepBytes;
    if (next <= size) break;
    size = next;
  }
  return sizes;
}
