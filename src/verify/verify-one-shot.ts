import { type OneShotPlan, oneShotPlan } from '../algorithms/one-shot-plan.js';
import { type CallShape, bufferCounts } from '../algorithms/schedule.js';
import { type FinalRank, checkPostcondition } from './postcondition.js';
import { type RankMemory, type Value, rankMemory } from './symbolic-memory.js';
import type { VerifyResult } from './verifier.js';

/**
 * Proves one-shot plans (algorithms/one-shot-plan.ts) symbolically, as verifier.ts proves
 * schedules: every rank publishes, waits for the ranks its plan awaits and runs its reads on
 * token-valued memory, and the collective's postcondition is checked, so a contribution missed
 * or folded twice, a reduction out of rank order, a piece read from the wrong rank or block
 * (a root not respected), a read of a message that carries no data or outside one, and a rank
 * that does not wait for every other (eagerly: for every rank that holds data) are all found.
 *
 * By reference, a reader reads the publisher's memory where it lies, possibly after the
 * publisher has written its own output: each rank's reads are run twice, once before any peer
 * wrote (and, for its own message, as it writes) and once after every peer did, so a plan that
 * publishes by reference what its own output overwrites is found.
 */
export interface OneShotVerifyOptions {
  /** Whether ranks that may publish by reference (publishesData, and byReferenceOverOutput where the output covers the message) do. */
  readonly byReference: boolean;
  /** Whether ranks wait for their plan's eagerAwaits (a transport whose unread publications leave nothing behind) rather than its awaits. */
  readonly eager?: boolean;
}

/** Verifies the plans of one call (one plan and shape per rank). */
export function verifyOneShotPlans(
  shapes: readonly CallShape[],
  plans: readonly OneShotPlan[],
  options: OneShotVerifyOptions,
): VerifyResult {
  const errors = checkStructure(shapes, plans, options.eager === true);
  if (errors.length > 0) return { ok: false, errors };
  const initial = shapes.map((shape, r) => rankMemory(shape, r, 0));
  const byReference = plans.map(
    (plan, r) =>
      options.byReference &&
      plan.publishesData &&
      (!publishedUnderOutput(shapes[r], initial[r], plan) || plan.byReferenceOverOutput),
  );
  const messages = plans.map((plan, r) =>
    initial[r].memory.slice(initial[r].base.input, initial[r].base.input + plan.messageCount),
  );
  // Every rank reads before any peer writes: by reference, its own message is read as it writes.
  const early = plans.map((plan, r) =>
    runReads(plan, initial[r], (peer, i) => (byReference[peer] && peer === r ? undefined : messages[peer][i])),
  );
  checkPostcondition(
    shapes,
    early.map((memory, r) => finalRank(initial[r], memory, plans[r], options)),
    errors,
  );
  if (errors.length > 0 || !byReference.some((b) => b)) return { ok: errors.length === 0, errors };
  // Every rank reads after every peer wrote its output.
  const late = plans.map((plan, r) =>
    runReads(plan, initial[r], (peer, i) =>
      !byReference[peer] ? messages[peer][i] : peer === r ? undefined : early[peer][initial[peer].base.input + i],
    ),
  );
  const lateErrors: string[] = [];
  checkPostcondition(
    shapes,
    late.map((memory, r) => finalRank(initial[r], memory, plans[r], options)),
    lateErrors,
  );
  errors.push(...lateErrors.map((e) => `by reference, read after the publishers wrote their output: ${e}`));
  return { ok: errors.length === 0, errors };
}

/** Verifies the one-shot path's plans for one call shape, by value and by reference, waiting as every transport does. */
export function verifyOneShot(shape: CallShape): VerifyResult {
  const shapes = Array.from({ length: shape.nranks }, () => shape);
  const plans = shapes.map((s, r) => oneShotPlan(s, r));
  for (const eager of [false, true]) {
    for (const byReference of [false, true]) {
      const result = verifyOneShotPlans(shapes, plans, { byReference, eager });
      if (!result.ok) return result;
    }
  }
  return { ok: true, errors: [] };
}

/** The ranks a plan waits for under the options. */
const waitsOf = (plan: OneShotPlan, options: Pick<OneShotVerifyOptions, 'eager'>) =>
  options.eager === true ? plan.eagerAwaits : plan.awaits;

/** What can be checked of the plans before running them: ranks, sizes, waits and the bounds of every read. */
function checkStructure(shapes: readonly CallShape[], plans: readonly OneShotPlan[], eager: boolean): string[] {
  const n = shapes.length;
  // Waiting eagerly a rank need only meet every rank that holds data (every rank if none does):
  // a rank that called something else then meets a message that is not its call's.
  const holders = plans.flatMap((plan, r) => (plan.publishesData ? [r] : []));
  const mustAwait = eager && holders.length > 0 ? holders : Array.from({ length: n }, (_, r) => r);
  const errors: string[] = [];
  if (plans.length !== n) return [`${plans.length} plans for ${n} ranks`];
  plans.forEach((plan, r) => {
    const shape = shapes[r];
    if (plan.rank !== r || plan.nranks !== n || plan.collective !== shape.collective || plan.count !== shape.count) {
      errors.push(
        `rank ${r}: its plan is for ${plan.collective} of ${plan.count} on rank ${plan.rank} of ${plan.nranks}`,
      );
      return;
    }
    if (plan.messageCount !== plans[0].messageCount) {
      errors.push(
        `rank ${r} publishes messages of ${plan.messageCount} elements, rank 0 of ${plans[0].messageCount}: every rank checks its peers' size`,
      );
    }
    const counts = bufferCounts(shape, r);
    if (plan.publishesData && plan.messageCount > counts.input) {
      errors.push(`rank ${r} publishes ${plan.messageCount} elements of an input of ${counts.input}`);
    }
    const awaited = new Set(waitsOf(plan, { eager }));
    for (const peer of mustAwait) {
      if (!awaited.has(peer))
        errors.push(
          `rank ${r} does not wait for rank ${peer}${eager ? ' (eagerly)' : ''}: a rank that called something else would go unseen`,
        );
    }
    for (const read of plan.reads) {
      const { peer, offset, outputOffset } = read;
      if (!Number.isInteger(peer) || peer < 0 || peer >= n) {
        errors.push(`rank ${r} reads rank ${peer}, which is not a rank of ${n}`);
      } else if (!awaited.has(peer)) {
        errors.push(`rank ${r} reads rank ${peer}'s slot without waiting for it`);
      } else if (!plans[peer].publishesData && plan.count > 0) {
        errors.push(`rank ${r} reads rank ${peer}'s message, which carries no data`);
      } else if (offset < 0 || offset + plan.count > plan.messageCount) {
        errors.push(
          `rank ${r} reads [${offset}, +${plan.count}) of rank ${peer}'s message of ${plan.messageCount} elements`,
        );
      }
      if (plan.combine === 'reduce' && outputOffset !== 0) {
        errors.push(
          `rank ${r} folds a piece at output offset ${outputOffset}: a reduction folds every piece onto the output's start`,
        );
      }
      if (outputOffset < 0 || outputOffset + plan.count > counts.output) {
        errors.push(`rank ${r} writes [${outputOffset}, +${plan.count}) of an output of ${counts.output} elements`);
      }
    }
  });
  return errors;
}

/** Whether the elements a rank publishes lie under its output (an in-place call). */
function publishedUnderOutput(shape: CallShape, memory: RankMemory, plan: OneShotPlan): boolean {
  const { base, size } = memory;
  return (
    shape.inPlace &&
    plan.messageCount > 0 &&
    size.output > 0 &&
    base.input < base.output + size.output &&
    base.output < base.input + plan.messageCount
  );
}

/**
 * Runs a rank's reads on a copy of its memory, as the executor combines: placed pieces are
 * copied whole, a reduction folds the pieces onto the output element by element, in the plan's
 * order. `element(peer, i)` is element i of peer's message; undefined: read this rank's own
 * memory where it lies, as it is at that moment.
 */
function runReads(
  plan: OneShotPlan,
  start: RankMemory,
  element: (peer: number, i: number) => Value | undefined,
): Value[] {
  const memory = start.memory.slice();
  const { input, output } = start.base;
  const source = (peer: number, i: number): Value => element(peer, i) ?? memory[input + i];
  const { reads, count } = plan;
  if (plan.combine === 'place' || reads.length === 1) {
    for (const read of reads) {
      const piece = Array.from({ length: count }, (_, i) => source(read.peer, read.offset + i));
      for (let i = 0; i < count; i++) memory[output + read.outputOffset + i] = piece[i];
    }
  } else if (plan.combine === 'reduce' && reads.length > 1) {
    for (let k = 1; k < reads.length; k++) {
      const read = reads[k];
      for (let i = 0; i < count; i++) {
        const left = k === 1 ? source(reads[0].peer, reads[0].offset + i) : memory[output + i];
        memory[output + i] = fold(left, source(read.peer, read.offset + i));
      }
    }
  }
  return memory;
}

/** A reduction of two values, in that order: the tokens are not sorted, so a fold out of rank order shows. */
const fold = (a: Value, b: Value): Value => (a === null || b === null ? null : [...a, ...b]);

function finalRank(
  start: RankMemory,
  memory: Value[],
  plan: OneShotPlan,
  options: Pick<OneShotVerifyOptions, 'eager'>,
): FinalRank {
  return { memory, base: start.base, size: start.size, knows: new Set([plan.rank, ...waitsOf(plan, options)]) };
}
