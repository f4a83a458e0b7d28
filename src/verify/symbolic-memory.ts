import { type BufferId, type CallShape, bufferCounts, inPlaceLayout, outerBuffer } from '../algorithms/schedule.js';

/**
 * A rank's memory as the verifiers run it: each element holds the list of input elements
 * ("tokens") folded into it, or null where nothing was written.
 */
export type Value = readonly number[] | null;

export const TOKEN_STRIDE = 1 << 24;
/** The token of `rank`'s input element `index`. */
export const token = (rank: number, index: number) => rank * TOKEN_STRIDE + index;
export const tokenName = (t: number) => `r${Math.floor(t / TOKEN_STRIDE)}[${t % TOKEN_STRIDE}]`;

export interface RankMemory {
  readonly memory: Value[];
  /** Where each buffer starts in memory: an in-place call's input and output overlap as its layout says. */
  readonly base: Record<BufferId, number>;
  readonly size: Record<BufferId, number>;
}

/** One rank's memory at the start of a call: its input holds its own tokens, the rest nothing. */
export function rankMemory(shape: CallShape, rank: number, scratch: number): RankMemory {
  const counts = bufferCounts(shape, rank);
  let memory: Value[];
  let base: Record<BufferId, number>;
  if (shape.inPlace) {
    const layout = inPlaceLayout(shape, rank);
    const outer = outerBuffer(layout);
    const outerSize = Math.max(counts[outer], layout.offset + counts[layout.inner]);
    base = { [outer]: 0, [layout.inner]: layout.offset, scratch: outerSize } as Record<BufferId, number>;
    memory = new Array<Value>(outerSize + scratch).fill(null);
  } else {
    base = { input: 0, output: counts.input, scratch: counts.input + counts.output };
    memory = new Array<Value>(counts.input + counts.output + scratch).fill(null);
  }
  for (let i = 0; i < counts.input; i++) memory[base.input + i] = [token(rank, i)];
  return { memory, base, size: { input: counts.input, output: counts.output, scratch } };
}
