import type { Communicator } from '../comm/communicator.js';
import { ErrorCode } from '../errors.js';

/**
 * A block lasts about this long or more: 20 calls of 8 B to 32 KiB take well under a millisecond,
 * and one stall of the VM (hundreds of us) then moved a block's mean by tens of percent, so the
 * small rows' regrets flipped from run to run (a 2-process broadcast of 32 KiB: 2.12 in one run,
 * its choice ahead when rerun with longer blocks). Calls per block: at least `minCalls`, as many
 * as fill this at the call's warm-up pace.
 */
export const BLOCK_MIN_MS = 20;
const BLOCK_MAX_CALLS = 2000;
/** Calls between two agreements of the ranks on whether they have settled. */
const SETTLE_ROUND_CALLS = 100;

export interface BlockOptions {
  /** Blocks timed per call. */
  readonly blocks: number;
  /** Calls per block at least. */
  readonly minCalls: number;
  /** Untimed calls of each call before its first block; the last quarter of them gives its pace. */
  readonly warmupCalls: number;
  /**
   * Before the warm-ups, the first call runs back to back until every rank has run it this
   * long (ms): a job's first calls run slower until its cores have been busy a while (thread
   * ranks take thousands of calls; bench/lib/sweep.mjs), more than one call's warm-up covers.
   */
  readonly settleMs?: number;
  /** Told the index of the call whose block just ended (bench/regret.mjs reads the tuner's choice). */
  readonly afterBlock?: (call: number) => void;
}

export interface BlockTimes {
  /** Per call, its blocks' means in us per call; null for a call refused as invalid. */
  readonly times: (number[] | null)[];
  /** Per call, the calls each of its blocks ran (0 for a refused call). */
  readonly callsPerBlock: number[];
}

/**
 * Times several collective calls of one job in blocks of back-to-back calls, the calls taking
 * turns block by block, so a slow spell of the machine (this 2-core VM swings 2-10x between
 * runs of one configuration) falls on all of them alike instead of on whichever ran in its own
 * launch at the time. Every rank runs the same calls in the same order. A call refused with
 * INVALID_ARGUMENT (the one-shot path on a message larger than its slot) is refused on every
 * rank alike, before anything moves, and is left out.
 */
export async function timeInBlocks(
  comm: Pick<Communicator, 'barrier' | 'allReduce'>,
  calls: readonly (() => Promise<void>)[],
  options: BlockOptions,
): Promise<BlockTimes> {
  const running: number[] = [];
  for (const [i, call] of calls.entries()) {
    try {
      await call();
      running.push(i);
    } catch (error) {
      if ((error as { code?: string })?.code !== ErrorCode.INVALID_ARGUMENT) throw error;
    }
  }
  if (options.settleMs !== undefined && running.length > 0) await settle(comm, calls[running[0]], options.settleMs);
  const paceUs = new Float64Array(calls.length);
  const paced = Math.max(1, options.warmupCalls >> 2);
  for (const i of running) {
    // The pace of the warm-up's last calls, after V8 compiled the path.
    for (let k = paced; k < options.warmupCalls; k++) await calls[i]();
    const start = performance.now();
    for (let k = 0; k < paced; k++) await calls[i]();
    paceUs[i] = ((performance.now() - start) * 1000) / paced;
  }
  const callsPerBlock = await agreedBlockCalls(comm, options.minCalls, paceUs);
  const times: (number[] | null)[] = calls.map((_, i) => (running.includes(i) ? [] : null));
  for (let block = 0; block < options.blocks; block++) {
    // Each block starts with another call, so none always follows the same one.
    for (let k = 0; k < running.length; k++) {
      const i = running[(block + k) % running.length];
      await calls[i](); // the first call after a switch is not timed
      // As nccl-tests before its timed loop: every rank starts the block together. Without it a
      // rank that runs ahead (a broadcast's root, whose sends end once its socket took them)
      // starts the next call's block while its peers still finish the last one.
      await comm.barrier();
      const start = performance.now();
      for (let c = 0; c < callsPerBlock[i]; c++) await calls[i]();
      times[i]!.push(((performance.now() - start) * 1000) / callsPerBlock[i]);
      options.afterBlock?.(i);
    }
  }
  return { times, callsPerBlock: callsPerBlock.map((n, i) => (running.includes(i) ? n : 0)) };
}

/** Runs `call` in rounds until every rank has run it for `ms`; the ranks agree after each round, so all make the same calls. */
async function settle(comm: Pick<Communicator, 'allReduce'>, call: () => Promise<void>, ms: number): Promise<void> {
  const start = performance.now();
  const settled = new Float64Array(1);
  while (settled[0] === 0) {
    for (let k = 0; k < SETTLE_ROUND_CALLS; k++) await call();
    settled[0] = performance.now() - start >= ms ? 1 : 0;
    await comm.allReduce(settled, { op: 'min' });
  }
}

/**
 * Each call's calls per block from its warm-up pace, the same on every rank (the ranks' paces
 * differ a little): the fewest any rank asks for, so no block runs longer than needed.
 */
async function agreedBlockCalls(
  comm: Pick<Communicator, 'allReduce'>,
  minCalls: number,
  paceUs: Float64Array,
): Promise<number[]> {
  const wanted = paceUs.map((us) =>
    us > 0 ? Math.min(BLOCK_MAX_CALLS, Math.max(minCalls, Math.ceil((BLOCK_MIN_MS * 1000) / us))) : minCalls,
  );
  await comm.allReduce(wanted, { op: 'min' });
  return Array.from(wanted);
}

/**
 * One call's block times as a job measured them: each block's mean over the ranks, from every
 * rank's `times[call]` (null where the call was refused, which every rank does alike).
 */
export function blockMeansOverRanks(
  perRank: readonly (readonly (readonly number[] | null)[])[],
  call: number,
): number[] | null {
  const first = perRank[0][call];
  return first === null
    ? null
    : first.map((_, b) => perRank.reduce((sum, rank) => sum + rank[call]![b], 0) / perRank.length);
}
