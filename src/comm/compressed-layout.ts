import { buildSchedule } from '../algorithms/registry.js';
import { type CallShape, type Range, type Schedule, bufferCounts, splitEven } from '../algorithms/schedule.js';
import { onMembers } from '../algorithms/sub-group.js';
import type { Codec } from '../compress/codec.js';
import type { CompressionHierarchy } from '../tuner/compression-hierarchy.js';
import { selectForCall } from '../tuner/predict.js';
import type { SelectionSite } from './prepared-call.js';

/** A collective a compressed call runs on the wire, as the tuner chose it for its size and group. */
export interface WirePhase {
  readonly shape: CallShape;
  readonly schedule: Schedule;
  /** 1: encoded bytes; 4: float32 values (a host's uncompressed reduction). */
  readonly elementBytes: 1 | 4;
}

/**
 * What one piece of a compressed call moves. Its values, or under a hierarchy this rank's share
 * of them after its host reduced them (`hierarchy.block` values), are cut into the chunks each
 * rank of the exchange group owns (reductions) or form one block (allGather, broadcast); then
 * their encoded sizes, and the phases: an all-to-all of encoded chunks (`exchange`), a gather,
 * all-gather or broadcast of one encoded block per rank (`spread`), and under a hierarchy a
 * reduce-scatter and an all-gather of float32 values among the host's ranks around them.
 */
export interface PieceLayout {
  /** Values of the piece (per block, for reduceScatter and allGather). */
  readonly count: number;
  /** Ranges of what is compressed: chunk j is the j-th exchange member's to reduce. */
  readonly chunks: readonly Range[];
  readonly encoded: readonly number[];
  /** The largest encoded chunk: what each rank's block in the spread phase holds. */
  readonly widest: number;
  readonly exchange: WirePhase | undefined;
  readonly spread: WirePhase | undefined;
  readonly hierarchy: HierarchyPhases | undefined;
}

/** A hierarchical all-reduce's host phases, and the share of the piece this rank compresses. */
export interface HierarchyPhases {
  /** Values of each host rank's share (the piece padded with zeros to localSize x block). */
  readonly block: number;
  readonly localSize: number;
  readonly localIndex: number;
  readonly localReduce: WirePhase;
  readonly localGather: WirePhase;
}

export interface LayoutSite {
  readonly rank: number;
  readonly size: number;
  readonly hosts: readonly number[] | undefined;
  readonly site: SelectionSite;
  /** Compress only between hosts (an all-reduce on several ranks per host). */
  readonly hierarchy: CompressionHierarchy | undefined;
}

/** The layout of a piece of `count` values of a compressed `collective` (the same on every rank). */
export function pieceLayout(
  collective: 'allReduce' | 'reduce' | 'reduceScatter' | 'allGather' | 'broadcast',
  count: number,
  root: number,
  codec: Codec,
  on: LayoutSite,
): PieceLayout {
  const { size, hosts, hierarchy } = on;
  const reduces = collective === 'allReduce' || collective === 'reduce' || collective === 'reduceScatter';
  const everyone = Array.from({ length: size }, (_, r) => r);
  const hierarchical = collective === 'allReduce' && hierarchy !== undefined;
  // The group that exchanges encoded chunks, and how many values it compresses.
  const group = hierarchical ? hierarchy.cross : everyone;
  const groupRank = hierarchical ? hierarchy.crossIndex : on.rank;
  const block = hierarchical ? Math.ceil(count / hierarchy.local.length) : count;
  const chunks =
    collective === 'reduceScatter'
      ? Array.from({ length: size }, (_, j) => ({ offset: j * count, count }))
      : reduces
        ? splitEven(block, group.length)
        : [{ offset: 0, count }];
  const encoded = chunks.map((chunk) => codec.encodedBytes(chunk.count));
  const widest = Math.max(...encoded);
  const groupHosts = hierarchical ? undefined : hosts;
  const base = {
    nranks: group.length,
    root,
    inPlace: false,
    chunkCount: 0,
    ...(groupHosts ? { hosts: groupHosts } : {}),
  };
  const packed = (counts: readonly number[]) => counts.map((_, i) => counts.slice(0, i).reduce((a, b) => a + b, 0));
  const recvCounts = Array.from({ length: group.length }, () => encoded[groupRank]);
  const phase = (shape: CallShape, members: readonly number[], memberRank: number, elementBytes: 1 | 4) =>
    wirePhase(shape, {
      members,
      memberRank,
      elementBytes,
      hostCount: new Set(members.map((r) => hosts?.[r] ?? 0)).size,
      whole: members.length === size,
      site: on.site,
    });
  const exchange = reduces
    ? phase(
        {
          ...base,
          collective: 'allToAll',
          count: 0,
          sendCounts: encoded,
          sendDispls: packed(encoded),
          recvCounts,
          recvDispls: packed(recvCounts),
        },
        group,
        groupRank,
        1,
      )
    : undefined;
  const spreadKind =
    collective === 'allReduce' || collective === 'allGather'
      ? 'allGather'
      : collective === 'reduce'
        ? 'gather'
        : collective === 'broadcast'
          ? 'broadcast'
          : undefined;
  const spread =
    spreadKind === undefined
      ? undefined
      : phase({ ...base, collective: spreadKind, count: widest }, group, groupRank, 1);
  const localShape = { nranks: hierarchy?.local.length ?? 1, root: 0, inPlace: false, chunkCount: 0, count: block };
  const hierarchyPhases: HierarchyPhases | undefined = hierarchical
    ? {
        block,
        localSize: hierarchy.local.length,
        localIndex: hierarchy.localIndex,
        localReduce: phase({ ...localShape, collective: 'reduceScatter' }, hierarchy.local, hierarchy.localIndex, 4),
        localGather: phase({ ...localShape, collective: 'allGather' }, hierarchy.local, hierarchy.localIndex, 4),
      }
    : undefined;
  return { count, chunks, encoded, widest, exchange, spread, hierarchy: hierarchyPhases };
}

/** The tuner's algorithm for a phase among `members` (the same on every member: its sizes are), its peers renamed to their ranks. */
function wirePhase(
  shape: CallShape,
  on: {
    members: readonly number[];
    memberRank: number;
    elementBytes: 1 | 4;
    hostCount: number;
    /** The group is the whole communicator, which the machine model prices; a smaller group's calls are priced by the rules. */
    whole: boolean;
    site: SelectionSite;
  },
): WirePhase {
  const { machine, ...site } = on.site;
  const selection = selectForCall({
    ...site,
    ...(on.whole ? { machine } : {}),
    hostCount: on.hostCount,
    oneShotCapacity: undefined,
    shape,
    bytes: bufferCounts(shape, shape.root).input * on.elementBytes,
    elementBytes: on.elementBytes,
  });
  const chunked = { ...shape, chunkCount: selection.chunkCount };
  return {
    shape: chunked,
    schedule: onMembers(buildSchedule(chunked, on.memberRank, selection.algorithm), on.members),
    elementBytes: on.elementBytes,
  };
}
