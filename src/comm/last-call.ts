import { anyValueArray } from '../any-value-array.js';
import { type TypedArray, isTypedArray } from '../dtypes/dtype.js';
import type { CallSettings } from './call-options.js';
import type { CallPlan } from './call-plan.js';

/** What a repeat takes of the call it repeats. */
export interface Kept {
  readonly settings: CallSettings;
  readonly plan: CallPlan;
}

/**
 * The last collective a communicator started and what its checks gave (its settings and plan).
 * A call of the same name on the same buffer whose options hold the same keys, in the same
 * order, with the same values, would pass the same checks and get the same plan, so it takes
 * them as they are: a stream of repeated small calls checks its options and plans once. Only
 * calls whose option values cannot change in place are kept (strings, numbers, booleans, typed
 * arrays, an AbortSignal, whose state is read on every call); an array of counts or a
 * compression object may be edited between calls, so such calls are checked every time.
 */
export class LastCall {
  private name: string | undefined;
  private buffer: TypedArray | undefined;
  private bufferLength = 0;
  private outputLength = -1;
  private readonly keys = anyValueArray<string>();
  private readonly values = anyValueArray<unknown>();
  /**
   * The kept call's settings and plan (none while plan is undefined): one object, refilled by
   * keep, since a job that passes a fresh array each call keeps a call every time.
   */
  private readonly held: { settings: CallSettings | undefined; plan: CallPlan | undefined } = {
    settings: undefined,
    plan: undefined,
  };

  /** The settings and plan of the last call, if `name` on `buffer` with `options` repeats it; else undefined. */
  repeated(name: string, buffer: TypedArray, options: object): Kept | undefined {
    const kept = this.held;
    if (kept.plan === undefined || name !== this.name || buffer !== this.buffer) return undefined;
    // A transferred buffer's arrays read as empty: its length tells.
    if (buffer.length !== this.bufferLength || outputLength(kept.plan) !== this.outputLength) return undefined;
    if (kept.settings!.signal?.aborted === true) return undefined;
    const keys = this.keys;
    const values = this.values;
    const given = options as Record<string, unknown>;
    let i = 0;
    for (const key in given) {
      if (i === keys.length || key !== keys[i] || given[key] !== values[i]) return undefined;
      i++;
    }
    return i === keys.length ? (kept as Kept) : undefined;
  }

  /** Keeps a call that passed its checks, if its options cannot change in place. */
  keep(name: string, buffer: TypedArray, options: object, settings: CallSettings, plan: CallPlan): void {
    this.forget();
    const given = options as Record<string, unknown>;
    for (const key in given) {
      const value = given[key];
      if (!unchangeable(value)) {
        this.forget();
        return;
      }
      this.keys.push(key);
      this.values.push(value);
    }
    this.name = name;
    this.buffer = buffer;
    this.bufferLength = buffer.length;
    this.outputLength = outputLength(plan);
    this.held.settings = settings;
    this.held.plan = plan;
  }

  /** Lets go of the last call's buffers. */
  forget(): void {
    this.held.settings = undefined;
    this.held.plan = undefined;
    this.name = undefined;
    this.buffer = undefined;
    this.keys.length = 0;
    this.values.length = 0;
  }
}

function outputLength(plan: CallPlan): number {
  return plan.output === undefined ? -1 : plan.output.length;
}

/** A value whose meaning to a call's checks cannot change without it becoming another value. */
function unchangeable(value: unknown): boolean {
  const type = typeof value;
  if (type !== 'object') return type !== 'function';
  return value === null || isTypedArray(value) || value instanceof AbortSignal;
}
