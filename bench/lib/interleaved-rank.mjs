// The rank side of bench/regret.mjs. For each size, every candidate (the tuner left to choose,
// and each algorithm forced) is timed in blocks of back-to-back calls, the candidates taking
// turns block by block within one job, so a slow spell of the machine (this 2-core VM swings
// 2-10x between runs of one configuration) falls on all of them alike instead of on whichever
// ran in its own launch at the time. Returns, per size, the tuner's choice and every
// candidate's block times (us per call; null where the candidate does not run that size).
import { BENCH_OPS, sweepSizes } from '../../dist/src/bench/bench-ops.js';
import { allocatePool, prepare } from '../../dist/src/bench/bench-rank.js';
import { init } from '../../dist/src/comm/init.js';
import { dtypeInfo } from '../../dist/src/dtypes/dtype.js';
import { ErrorCode } from '../../dist/src/errors.js';

const { INVALID_ARGUMENT } = ErrorCode;

/**
 * A block lasts about this long or more: 20 calls of 8 B to 32 KiB take well under a millisecond, and
 * one stall of the VM (hundreds of us) then moved a block's mean by tens of percent, so the
 * small rows' regrets flipped from run to run (a 2-process broadcast of 32 KiB: 2.12 in one
 * run, its choice ahead when rerun with longer blocks). Calls per block: at least `iters`, as
 * many as fill this at the candidate's warm-up pace.
 */
export const BLOCK_MIN_MS = 20;
const BLOCK_MAX_CALLS = 2000;

/**
 * @param {{ args: string[] }} job args[0]: JSON of { options (BenchOptions without algorithm),
 *   candidates: { algorithm?: string }[] (no algorithm: the tuner's choice),
 *   blocks, warmup: { calls, longCalls, longMaxBytes } }
 */
export default async function interleavedRank({ args }) {
  const { options, candidates, blocks, warmup } = JSON.parse(args[0]);
  const comm = await init({ timeoutMs: options.timeoutMs });
  const op = BENCH_OPS[options.op];
  const wordSize = dtypeInfo(options.dtype).bytes;
  const sizes = sweepSizes(options.minBytes, options.maxBytes, options.stepFactor, options.stepBytes);
  const largest = op.counts(Math.floor(Math.max(...sizes) / wordSize), comm.size);
  const pool = allocatePool(comm, options.dtype, Math.max(largest.send, largest.recv), largest.recv);
  const results = [];
  for (const size of sizes) {
    const calls = candidates.map((c) => prepare(op, comm, { ...options, algorithm: c.algorithm }, Math.floor(size / wordSize), false, pool)?.call);
    await comm.barrier();
    // A forced algorithm that cannot run this call (the one-shot path on a message larger than
    // its slot) is refused on every rank alike, before anything moves.
    for (const [i, call] of calls.entries()) {
      try {
        await call?.();
      } catch (error) {
        if (error?.code !== INVALID_ARGUMENT) throw error;
        calls[i] = undefined;
      }
    }
    const running = calls.flatMap((call, i) => (call === undefined ? [] : [i]));
    const times = calls.map((call) => (call === undefined ? null : []));
    let chosen;
    const warmupCalls = size <= warmup.longMaxBytes ? warmup.longCalls : warmup.calls;
    const paceUs = new Float64Array(calls.length);
    for (const i of running) {
      // The pace of the warm-up's last calls, after V8 compiled the path.
      const paced = Math.max(1, warmupCalls >> 2);
      for (let k = paced; k < warmupCalls; k++) await calls[i]();
      const start = performance.now();
      for (let k = 0; k < paced; k++) await calls[i]();
      paceUs[i] = ((performance.now() - start) * 1000) / paced;
    }
    const callsPerBlock = await agreedBlockCalls(comm, options.iters, paceUs);
    for (let block = 0; block < blocks; block++) {
      // Each block starts with another candidate, so none always follows the same one.
      for (let k = 0; k < running.length; k++) {
        const i = running[(block + k) % running.length];
        await calls[i](); // the first call after a switch is not timed
        // As nccl-tests before its timed loop: every rank starts the block together. Without it
        // a rank that runs ahead (a broadcast's root, whose sends end once its socket took them)
        // starts the next candidate's block while its peers still finish the last one.
        await comm.barrier();
        const start = performance.now();
        for (let c = 0; c < callsPerBlock[i]; c++) await calls[i]();
        times[i].push(((performance.now() - start) * 1000) / callsPerBlock[i]);
        if (candidates[i].algorithm === undefined) chosen = comm.flightRecords().records.at(-1)?.algorithm;
      }
    }
    const counts = op.counts(Math.floor(size / wordSize), comm.size);
    results.push({ bytes: Math.max(counts.send, counts.recv) * wordSize, chosen, times, callsPerBlock: Math.min(...running.map((i) => callsPerBlock[i])) });
  }
  await comm.destroy();
  return results;
}

/**
 * Each candidate's calls per block from its warm-up pace, the same on every rank (the ranks'
 * paces differ a little): the fewest any rank asks for, so no block runs longer than needed.
 */
async function agreedBlockCalls(comm, iters, paceUs) {
  const wanted = paceUs.map((us) => (us > 0 ? Math.min(BLOCK_MAX_CALLS, Math.max(iters, Math.ceil((BLOCK_MIN_MS * 1000) / us))) : iters));
  await comm.allReduce(wanted, { op: 'min' });
  return wanted;
}
