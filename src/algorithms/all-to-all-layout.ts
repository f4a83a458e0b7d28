import { type BufferId, type CallShape, StepList, slice } from './schedule.js';

export interface AllToAllLayout {
  readonly sendCounts: readonly number[];
  readonly sendDispls: readonly number[];
  readonly recvCounts: readonly number[];
  readonly recvDispls: readonly number[];
}

/** Per-peer counts and displacements of an all-to-all, equal or variable. */
export function allToAllLayout(shape: CallShape): AllToAllLayout {
  const n = shape.nranks;
  const equal = Array.from({ length: n }, () => shape.count);
  const equalDispls = Array.from({ length: n }, (_, i) => i * shape.count);
  return {
    sendCounts: shape.sendCounts ?? equal,
    sendDispls: shape.sendDispls ?? equalDispls,
    recvCounts: shape.recvCounts ?? equal,
    recvDispls: shape.recvDispls ?? equalDispls,
  };
}

/**
 * The start every all-to-all shares: the layout, the buffer its sends read, and this rank's own
 * block copied into place. In place, the input is first copied to scratch: a rank must not
 * receive over a block it has not sent yet.
 */
export function allToAllStart(
  shape: CallShape,
  rank: number,
): { layout: AllToAllLayout; list: StepList; source: BufferId; scratchCount: number } {
  const layout = allToAllLayout(shape);
  const { sendCounts, sendDispls, recvCounts, recvDispls } = layout;
  const list = new StepList();
  let source: BufferId = 'input';
  let scratchCount = 0;
  if (shape.inPlace && shape.nranks > 1) {
    scratchCount = Math.max(0, ...sendCounts.map((c, i) => sendDispls[i] + c));
    list.copy(slice('input', 0, scratchCount), slice('scratch', 0, scratchCount));
    source = 'scratch';
  }
  list.copy(slice(source, sendDispls[rank], sendCounts[rank]), slice('output', recvDispls[rank], recvCounts[rank]));
  return { layout, list, source, scratchCount };
}
