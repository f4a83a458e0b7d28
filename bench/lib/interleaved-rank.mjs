// The rank side of bench/regret.mjs. For each size, every candidate (the tuner left to choose,
// and each algorithm forced) is timed in blocks of back-to-back calls, the candidates taking
// turns block by block within one job (src/bench/time-in-blocks.ts). Returns, per size, the
// tuner's choice and every candidate's block times (us per call; null where the candidate does
// not run that size).
import { BENCH_OPS, sweepSizes } from '../../dist/src/algorithms/bench-ops.js';
import { allocatePool, prepare } from '../../dist/src/bench/bench-rank.js';
import { warmupCallsFor } from '../../dist/src/bench/warm-up.js';
import { timeInBlocks } from '../../dist/src/bench/time-in-blocks.js';
import { init } from '../../dist/src/comm/init.js';
import { dtypeInfo } from '../../dist/src/dtypes/dtype.js';

/**
 * @param {{ args: string[] }} job args[0]: JSON of { options (BenchOptions without algorithm),
 *   candidates: { algorithm?: string }[] (no algorithm: the tuner's choice),
 *   blocks, warmup: { calls, smallCalls, settleMs } } (calls and smallCalls as warmupCallsFor takes them)
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
    const prepared = candidates.map(
      (c) => prepare(op, comm, { ...options, algorithm: c.algorithm }, Math.floor(size / wordSize), false, pool)?.call,
    );
    const offered = prepared.flatMap((call, i) => (call === undefined ? [] : [i]));
    await comm.barrier();
    let chosen;
    const { times, callsPerBlock } = await timeInBlocks(
      comm,
      offered.map((i) => prepared[i]),
      {
        blocks,
        minCalls: options.iters,
        warmupCalls: warmupCallsFor(size, warmup.calls, warmup.smallCalls),
        settleMs: size === sizes[0] ? warmup.settleMs : undefined,
        afterBlock: (k) => {
          if (candidates[offered[k]].algorithm === undefined) chosen = comm.flightRecords().records.at(-1)?.algorithm;
        },
      },
    );
    const counts = op.counts(Math.floor(size / wordSize), comm.size);
    results.push({
      bytes: Math.max(counts.send, counts.recv) * wordSize,
      chosen,
      times: candidates.map((_, i) => (offered.includes(i) ? times[offered.indexOf(i)] : null)),
      callsPerBlock: Math.min(...callsPerBlock.filter((n) => n > 0)),
    });
  }
  await comm.destroy();
  return results;
}
