import type { TypedArray } from '../dtypes/dtype.js';
import { sameView } from './executor.js';

/**
 * A collective on a communicator of one rank: its result is its input, so the call copies its
 * input view to its output view, and in place does nothing, as NCCL runs a one-rank call as a
 * single device copy, instead of staging the call and running a one-rank schedule.
 */
export class LocalCopy {
  private readonly input: TypedArray;
  private readonly output: TypedArray;
  private readonly copies: boolean;

  constructor(views: { input: TypedArray; output: TypedArray }) {
    this.input = views.input;
    this.output = views.output;
    // In place the two views are one (an all-gather's block is the whole output of one rank).
    this.copies = !sameView(views.input, views.output);
  }

  run(): void {
    if (this.copies) this.output.set(this.input as never);
  }
}
