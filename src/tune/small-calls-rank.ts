import { init } from '../comm/init.js';
import { allocatePool, prepare } from '../bench/bench-rank.js';
import { BENCH_OPS } from '../algorithms/bench-ops.js';
import { timeInBlocks } from '../bench/time-in-blocks.js';
import type { SmallCall, SmallCallsJob } from './small-calls.js';

const WORD_BYTES = 4; // float32

/**
 * The rank side of tune's small calls (small-calls.ts): each call prepared as `tsccl bench`
 * prepares it, on one pool large enough for all, then timed in turns block by block. Returns,
 * per call, this rank's block means (us per call).
 */
export default async function smallCallsRank({ args }: { args: string[] }): Promise<(number[] | null)[]> {
  const job = JSON.parse(args[0]) as SmallCallsJob;
  const comm = await init({ timeoutMs: job.timeoutMs });
  const counts = (call: SmallCall) => BENCH_OPS[call.op].counts(Math.floor(call.bytes / WORD_BYTES), comm.size);
  const pool = allocatePool(
    comm,
    'float32',
    Math.max(...job.calls.map((c) => Math.max(counts(c).send, counts(c).recv))),
    Math.max(...job.calls.map((c) => counts(c).recv)),
  );
  const calls = job.calls.map((call) => {
    const options = {
      op: call.op,
      ranks: comm.size,
      minBytes: call.bytes,
      maxBytes: call.bytes,
      stepFactor: 2,
      stepBytes: 1,
      iters: job.minCalls,
      warmupIters: 0,
      check: false,
      dtype: 'float32',
      redop: 'sum',
      root: 0,
      timeoutMs: job.timeoutMs,
      ...(call.algorithm === undefined ? {} : { algorithm: call.algorithm }),
    } as const;
    return prepare(BENCH_OPS[call.op], comm, options, Math.floor(call.bytes / WORD_BYTES), false, pool)!.call;
  });
  await comm.barrier();
  const { times } = await timeInBlocks(comm, calls, {
    blocks: job.blocks,
    minCalls: job.minCalls,
    warmupCalls: job.warmupCalls,
  });
  await comm.destroy();
  return times;
}
