import { buildSchedule } from '../algorithms/registry.js';
import { type CallShape, type Range, type Schedule, bufferCounts, splitEven } from '../algorithms/schedule.js';
import type { Codec } from '../compress/codec.js';
import { selectForCall } from '../tuner/predict.js';
import type { SelectionSite } from './prepared-call.js';

/** A byte collective of a compressed call, as the tuner chose it for its size. */
export interface BytePhase {
  readonly shape: CallShape;
  readonly schedule: Schedule;
}

/**
 * What one piece of a compressed call moves: its elements cut into the chunks each rank owns
 * (reductions) or one block (allGather, broadcast), their encoded sizes, and the byte phases: an
 * all-to-all of encoded chunks (`exchange`), and a gather, all-gather or broadcast of one encoded
 * block per rank (`spread`).
 */
export interface PieceLayout {
  /** Elements of the piece (per block, for reduceScatter and allGather). */
  readonly count: number;
  /** Ranges within the piece: chunk j is rank j's to reduce (one range for allGather and broadcast). */
  readonly chunks: readonly Range[];
  readonly encoded: readonly number[];
  /** The largest encoded chunk: what each rank's block in the spread phase holds. */
  readonly widest: number;
  readonly exchange: BytePhase | undefined;
  readonly spread: BytePhase | undefined;
}

export interface LayoutSite {
  readonly rank: number;
  readonly size: number;
  readonly hosts: readonly number[] | undefined;
  readonly site: SelectionSite;
}

/** The layout of a piece of `count` elements of a compressed `collective` (the same on every rank). */
export function pieceLayout(
  collective: 'allReduce' | 'reduce' | 'reduceScatter' | 'allGather' | 'broadcast',
  count: number,
  root: number,
  codec: Codec,
  on: LayoutSite,
): PieceLayout {
  const { size, hosts } = on;
  const reduces = collective === 'allReduce' || collective === 'reduce' || collective === 'reduceScatter';
  const chunks =
    collective === 'reduceScatter'
      ? Array.from({ length: size }, (_, j) => ({ offset: j * count, count }))
      : reduces
        ? splitEven(count, size)
        : [{ offset: 0, count }];
  const encoded = chunks.map((chunk) => codec.encodedBytes(chunk.count));
  const widest = Math.max(...encoded);
  const base = { nranks: size, root, inPlace: false, chunkCount: 0, ...(hosts ? { hosts } : {}) };
  const packed = (counts: readonly number[]) => counts.map((_, i) => counts.slice(0, i).reduce((a, b) => a + b, 0));
  const recvCounts = Array.from({ length: size }, () => encoded[on.rank]);
  const exchange = reduces
    ? bytePhase(
        {
          ...base,
          collective: 'allToAll',
          count: 0,
          sendCounts: encoded,
          sendDispls: packed(encoded),
          recvCounts,
          recvDispls: packed(recvCounts),
        },
        on,
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
    spreadKind === undefined ? undefined : bytePhase({ ...base, collective: spreadKind, count: widest }, on);
  return { count, chunks, encoded, widest, exchange, spread };
}

/** The tuner's algorithm for a byte phase (the same on every rank: its sizes are). */
function bytePhase(shape: CallShape, on: LayoutSite): BytePhase {
  const selection = selectForCall({
    ...on.site,
    oneShotCapacity: undefined,
    shape,
    bytes: bufferCounts(shape, shape.root).input,
    elementBytes: 1,
  });
  const chunked = { ...shape, chunkCount: selection.chunkCount };
  return { shape: chunked, schedule: buildSchedule(chunked, on.rank, selection.algorithm) };
}
