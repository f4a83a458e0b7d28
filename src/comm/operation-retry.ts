import { REDUCING_COLLECTIVES } from '../algorithms/schedule.js';
import type { TypedArray } from '../dtypes/dtype.js';
import { ErrorCode, TscclError } from '../errors.js';
import { bytesOverlap } from '../exec/executor.js';
import type { CallPlan } from './call-plan.js';

/**
 * Operation retry, the last tier of recovery (as HCCL's operator retry): a collective whose
 * transfer could not go on although every rank lives (a link lost for good, a frame past its
 * resends) runs again from its input over new connections, once every rank agrees
 * (retry-meeting.ts). Only where running it again gives the same result: the call did not
 * overwrite its input, or a copy was kept (TSCCL_OP_RETRY_SAVE_INPUT).
 */

/** Whether running again may mend a call that ended with `err`: a link lost, or a frame past its resends. */
export function mendable(err: unknown): err is TscclError {
  return err instanceof TscclError && (err.code === ErrorCode.PEER_LOST || err.code === ErrorCode.CHECKSUM);
}

/**
 * Whether the call writes where it reads: in place (or overlapping) reductions and all-to-alls.
 * An in-place broadcast, all-gather, gather or scatter leaves each rank's own input as it was.
 */
export function overwritesInput(plan: CallPlan): boolean {
  const { input, output, collective } = plan;
  if (input === undefined || input.byteLength === 0) return false;
  if (!REDUCING_COLLECTIVES.has(collective) && collective !== 'allToAll') return false;
  return (
    plan.shape.inPlace ||
    (output !== undefined &&
      bytesOverlap(output.buffer, output.byteOffset, output.byteOffset + output.byteLength, input))
  );
}

/** A copy of the input bytes of a call that overwrites them, to run it again from (TSCCL_OP_RETRY_SAVE_INPUT). */
export function savedInput(plan: CallPlan): Uint8Array | undefined {
  return overwritesInput(plan) ? bytesOf(plan.input!).slice() : undefined;
}

/** Puts back the input a call overwrote, from savedInput's copy. */
export function restoreInput(plan: CallPlan, saved: Uint8Array): void {
  bytesOf(plan.input!).set(saved);
}

const bytesOf = (array: TypedArray) => new Uint8Array(array.buffer, array.byteOffset, array.byteLength);

/** Why this rank cannot run `plan` again after `err`, if it cannot (told to every rank at the meeting). */
export function retryVeto(
  plan: CallPlan,
  err: TscclError,
  state: { readonly saved: boolean; readonly pointToPointBusy: boolean; readonly leftMs: number },
): string | undefined {
  // What the call itself rules out comes first: it holds whichever way the link was lost, so every
  // rank gives the same reason however the failure reached it.
  if (plan.compression?.residual !== undefined)
    return 'its compressed call keeps error feedback, which running it again would apply twice';
  if (overwritesInput(plan) && !state.saved)
    return `its ${plan.label} is in place and overwrote its input (TSCCL_OP_RETRY_SAVE_INPUT=1 keeps a copy to run it again from)`;
  const { lost, peer } = err.details;
  if (lost === 'process-gone') return `rank ${String(peer)}'s process is gone`;
  if (lost === 'silent') return `rank ${String(peer)} fell silent past the heartbeat timeout`;
  if (state.pointToPointBusy)
    return 'sends or receives of the communicator are in flight, which new connections would lose';
  if (state.leftMs <= 0) return "the call's time is up";
  return undefined;
}

/** The error a call ends with when it was not run again: the failure, and why not. */
export function notRunAgain(err: TscclError, why: string): TscclError {
  return new TscclError(err.code, `${err.message}; not run again (operation retry): ${why}`, {
    ...err.details,
    retry: why,
  });
}
