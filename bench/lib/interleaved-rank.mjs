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
    for (const i of running) for (let k = 0; k < warmupCalls; k++) await calls[i]();
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
        for (let c = 0; c < options.iters; c++) await calls[i]();
        times[i].push(((performance.now() - start) * 1000) / options.iters);
        if (candidates[i].algorithm === undefined) chosen = comm.flightRecords().records.at(-1)?.algorithm;
      }
    }
    const counts = op.counts(Math.floor(size / wordSize), comm.size);
    results.push({ bytes: Math.max(counts.send, counts.recv) * wordSize, chosen, times });
  }
  await comm.destroy();
  return results;
}
