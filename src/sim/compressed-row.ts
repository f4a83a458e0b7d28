import { BENCH_OPS, type BenchOpName } from '../algorithms/bench-ops.js';
import { codecFor } from '../compress/codec.js';
import { type CompressionSpec, PIECE_ELEMENTS, compressionLabel } from '../compress/compression-spec.js';
import { invalidArgument } from '../errors.js';
import type { TopologyGraph } from '../topology/topology-graph.js';
import { type SimRequest, type SimRow, simulateRow } from './simulate.js';

export const COMPRESSIBLE_OPS: readonly BenchOpName[] = [
  'all_reduce',
  'reduce_scatter',
  'reduce',
  'all_gather',
  'broadcast',
];

export interface CompressedSimRequest extends SimRequest {
  readonly compression: CompressionSpec;
  /** The codecs' speed on the ranks, GB/s of input values per pass over them (encode, accumulate or decode). */
  readonly codecGBps: number;
}

/** A compressed row: the call's time with the bytes on the wire, and how the time divides. */
export interface CompressedSimRow extends SimRow {
  readonly compression: string;
  /** Encoded bytes of the compressed phases (as nccl-tests sizes them: each rank's buffer), and all phases' time alone. */
  readonly wireBytes: number;
  readonly wireUs: number;
  /** The codecs' time on one rank, and how many pieces the pipeline overlaps it in. */
  readonly codecUs: number;
  readonly pieces: number;
}

/**
 * A compressed collective as the library runs it (comm/compressed-call.ts): for reductions an
 * all-to-all of encoded chunks, then (allReduce, reduce) an all-gather or gather of the encoded
 * sums; for allGather and broadcast the encoded blocks alone; an all-reduce over hosts of several
 * ranks each inside a host reduce-scatter and all-gather (hostMembers). Each byte phase is simulated as
 * the collective it is; the codecs' passes over the values cost `codecGBps`; pieces pipeline the
 * two, so the call takes the longer of wire and codecs plus one piece of the shorter.
 */
export function simulateCompressedRow(
  graph: TopologyGraph,
  rankDevices: readonly number[],
  request: CompressedSimRequest,
): CompressedSimRow {
  const op = BENCH_OPS[request.op];
  if (!COMPRESSIBLE_OPS.includes(request.op))
    throw invalidArgument(`--compression applies to ${COMPRESSIBLE_OPS.join(', ')}, not ${request.op}`, {
      argument: '--compression',
    });
  const n = rankDevices.length;
  const codec = codecFor(request.compression);
  const counts = op.counts(Math.floor(request.bytes / request.elementBytes), n);
  const perBlock = counts.param;
  const phase = (name: BenchOpName, bytes: number, devices = rankDevices, elementBytes = 1) =>
    // The phases run on the codec's own buffers, never in place.
    simulateRow(graph, devices, { ...request, op: name, bytes, algorithm: undefined, elementBytes, inPlace: false });
  let phases: SimRow[];
  // The phases that carry encoded bytes (a hierarchy's host phases carry the values uncompressed).
  let encodedPhases: () => SimRow[] = () => phases;
  // Values each rank's codecs pass over: encodes, accumulations and decodes.
  let passes: number;
  const hosts = (request.op === 'all_reduce' ? hostMembers(graph, rankDevices) : undefined) ?? [];
  switch (hosts.length > 0 ? 'hierarchical' : request.op) {
    case 'hierarchical': {
      // The library's hierarchy (tuner/compression-hierarchy.ts): a host's ranks reduce-scatter
      // uncompressed, one rank per host all-reduces each share compressed, the host all-gathers.
      const perHost = hosts[0].length;
      const share = Math.ceil(perBlock / perHost);
      const cross = hosts.map((members) => members[0]);
      const chunk = codec.encodedBytes(Math.ceil(share / cross.length));
      const floats = perHost * share * request.elementBytes;
      phases = [
        phase('reduce_scatter', floats, hosts[0], request.elementBytes),
        phase('alltoall', cross.length * chunk, cross),
        phase('all_gather', cross.length * chunk, cross),
        phase('all_gather', floats, hosts[0], request.elementBytes),
      ];
      passes = 3 * share + share / cross.length;
      encodedPhases = () => phases.slice(1, 3);
      break;
    }
    case 'all_reduce':
    case 'reduce': {
      const chunk = codec.encodedBytes(Math.ceil(perBlock / n));
      const spread = request.op === 'all_reduce' ? 'all_gather' : 'gather';
      phases = [phase('alltoall', n * chunk), phase(spread, n * chunk)];
      passes = 3 * perBlock + perBlock / n;
      break;
    }
    case 'reduce_scatter': {
      phases = [phase('alltoall', n * codec.encodedBytes(perBlock))];
      passes = 2 * n * perBlock;
      break;
    }
    case 'all_gather':
      phases = [phase('all_gather', n * codec.encodedBytes(perBlock))];
      passes = perBlock + n * perBlock;
      break;
    default:
      phases = [phase('broadcast', codec.encodedBytes(perBlock))];
      passes = 2 * perBlock;
  }
  const wireUs = phases.reduce((a, p) => a + p.timeUs, 0);
  const codecUs = (passes * request.elementBytes) / (request.codecGBps * 1e3);
  const pieces = Math.max(1, Math.ceil(perBlock / PIECE_ELEMENTS));
  const timeUs = Math.max(wireUs, codecUs) + Math.min(wireUs, codecUs) / pieces;
  const algbwGBs = timeUs > 0 ? (counts.algorithm * request.elementBytes) / (timeUs * 1000) : 0;
  const label = compressionLabel(request.compression);
  const busiest = phases.reduce((a, p) => (p.timeUs > a.timeUs ? p : a));
  return {
    ...busiest,
    op: request.op,
    bytes: Math.max(counts.send, counts.recv) * request.elementBytes,
    count: counts.param,
    timeUs,
    algbwGBs,
    busbwGBs: algbwGBs * op.busFactor(n),
    algorithm: `${label} ${phases.map((p) => `${p.op}:${p.algorithm}`).join('+')}`,
    reduces: op.reduces,
    root: request.root,
    ranks: n,
    compression: label,
    wireBytes: encodedPhases().reduce((a, p) => a + p.bytes, 0),
    wireUs,
    codecUs,
    pieces,
  };
}

/**
 * The ranks of every host, when they span several hosts with the same number (more than one) on
 * each: where the library's compressed all-reduce runs its hierarchy. Concurrent shares' traffic
 * between hosts is priced as one share's, which holds where each rank of a host has its own NIC
 * (rail-optimised GPU servers); ranks that share one NIC take longer than predicted.
 */
function hostMembers(graph: TopologyGraph, rankDevices: readonly number[]): number[][] | undefined {
  if (rankDevices.length === 0) return undefined;
  const byHost = new Map<number, number[]>();
  for (const d of rankDevices) {
    const host = graph.devices[d].host ?? 0;
    if (!byHost.has(host)) byHost.set(host, []);
    byHost.get(host)!.push(d);
  }
  const members = [...byHost.values()];
  const perHost = members[0].length;
  return members.length > 1 && perHost > 1 && members.every((m) => m.length === perHost) ? members : undefined;
}
