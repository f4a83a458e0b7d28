import { allToAllLayout } from '../algorithms/all-to-all-layout.js';
import type { CallShape } from '../algorithms/schedule.js';
import { type RankMemory, TOKEN_STRIDE, token, tokenName } from './symbolic-memory.js';

/** A rank's memory at the end of a symbolic run, and the ranks it heard from (directly or not). */
export interface FinalRank extends RankMemory {
  readonly knows: ReadonlySet<number>;
}

/**
 * Checks every rank's final memory against its collective's postcondition: each output element
 * holds exactly the tokens it should, in rank order for reductions (the schedule verifier keeps
 * a fold's tokens sorted, which is rank order too), an out-of-place call's input is as it was,
 * and a rank leaves a barrier only after hearing from every rank.
 */
export function checkPostcondition(shapes: readonly CallShape[], ranks: readonly FinalRank[], errors: string[]): void {
  const n = shapes.length;
  const all = (index: number) => Array.from({ length: n }, (_, r) => token(r, index));
  ranks.forEach((me, rank) => {
    const shape = shapes[rank];
    const c = shape.count;
    const expectOutput = (index: number, want: readonly number[]) => {
      const got = me.memory[me.base.output + index];
      if (got === null || got.length !== want.length || got.some((t, i) => t !== want[i])) {
        if (errors.length < 20) {
          errors.push(
            `rank ${rank}: output[${index}] holds ${got === null ? 'nothing' : got.map(tokenName).join('+')}, expected ${want.map(tokenName).join('+')}`,
          );
        }
      }
    };
    switch (shape.collective) {
      case 'allReduce':
        for (let i = 0; i < c; i++) expectOutput(i, all(i));
        break;
      case 'reduce':
        if (rank === shape.root) for (let i = 0; i < c; i++) expectOutput(i, all(i));
        break;
      case 'reduceScatter':
        for (let i = 0; i < c; i++) expectOutput(i, all(rank * c + i));
        break;
      case 'broadcast':
        for (let i = 0; i < c; i++) expectOutput(i, [token(shape.root, i)]);
        break;
      case 'allGather':
        for (let p = 0; p < n; p++) for (let i = 0; i < c; i++) expectOutput(p * c + i, [token(p, i)]);
        break;
      case 'gather':
        if (rank === shape.root)
          for (let p = 0; p < n; p++) for (let i = 0; i < c; i++) expectOutput(p * c + i, [token(p, i)]);
        break;
      case 'scatter':
        for (let i = 0; i < c; i++) expectOutput(i, [token(shape.root, rank * c + i)]);
        break;
      case 'allToAll': {
        const mine = allToAllLayout(shape);
        for (let p = 0; p < n; p++) {
          const theirs = allToAllLayout(shapes[p]);
          for (let i = 0; i < mine.recvCounts[p]; i++)
            expectOutput(mine.recvDispls[p] + i, [token(p, theirs.sendDispls[rank] + i)]);
        }
        break;
      }
      case 'barrier':
        if (me.knows.size !== n)
          errors.push(
            `rank ${rank}: left the barrier without hearing from ranks ${all(0)
              .map((t) => t / TOKEN_STRIDE)
              .filter((r) => !me.knows.has(r))
              .join(', ')}`,
          );
        break;
    }
    if (!shape.inPlace) {
      for (let i = 0; i < me.size.input; i++) {
        const v = me.memory[me.base.input + i];
        if (v === null || v.length !== 1 || v[0] !== token(rank, i)) {
          errors.push(`rank ${rank}: input[${i}] was overwritten in an out-of-place call`);
          break;
        }
      }
    }
  });
}
