import type { Communicator } from '../comm/communicator.js';
import { init } from '../comm/init.js';
import { type DType, type TypedArray, dtypeInfo } from '../dtypes/dtype.js';
import type { ReduceOp } from '../kernels/reduce-op.js';
import { type BenchOp, type BenchOpName, BENCH_OPS, hasInPlace, sweepSizes } from '../algorithms/bench-ops.js';
import type { BenchOptions, RankMeasurement } from './bench-options.js';
import { concatenate, countDifferences, makeData, referenceReduce } from './pattern.js';
import { warmupCallsFor } from './warm-up.js';
import { compareResults } from '../comm/compression-shadow.js';

/** One prepared placement: the call to time, how to load check data, how to count wrong elements. */
export interface Prepared {
  readonly call: () => Promise<void>;
  readonly fill: () => void;
  /** Elements that differ from the reference (a compressed call's differences are its error, counted by `error` instead). */
  readonly wrong: () => number;
  /** Compressed calls: the largest |result - reference| over the largest |reference|. */
  readonly error?: () => number;
}

/**
 * The rank side of `tsccl bench`: for each size and placement, check once (if asked), meet in a
 * barrier, warm up, then time `iters` back-to-back calls. Buffers are registered (comm.alloc),
 * as device buffers are in nccl-tests, and allocated once for the largest size: per-size
 * allocations would only return to the arena when collected, and 8 ranks sweeping to 128 MB
 * would outgrow its 4 GiB.
 */
export default async function benchRank({ args }: { args: string[] }): Promise<(RankMeasurement | null)[][]> {
  const options = JSON.parse(args[0]) as BenchOptions;
  const comm = await init({ timeoutMs: options.timeoutMs });
  const rows = await measureRank(comm, options);
  await comm.destroy();
  return rows;
}

/** This rank's measurements: per size, out-of-place then in-place (null where not applicable). */
export async function measureRank(comm: Communicator, options: BenchOptions): Promise<(RankMeasurement | null)[][]> {
  const op = BENCH_OPS[options.op];
  const wordSize = dtypeInfo(options.dtype).bytes;
  const rows: (RankMeasurement | null)[][] = [];
  const sizes = sweepSizes(options.minBytes, options.maxBytes, options.stepFactor, options.stepBytes);
  const largest = op.counts(Math.floor(Math.max(0, ...sizes) / wordSize), comm.size);
  const pool = allocatePool(comm, options.dtype, Math.max(largest.send, largest.recv), largest.recv);
  for (const size of sizes) {
    const row: (RankMeasurement | null)[] = [];
    for (const inPlace of [false, true]) {
      const prepared = prepare(op, comm, options, Math.floor(size / wordSize), inPlace, pool);
      if (prepared === undefined) {
        row.push(null);
        continue;
      }
      let wrong = 0;
      let maxError: number | undefined;
      if (options.check) {
        prepared.fill();
        await prepared.call();
        if (prepared.error === undefined) wrong = prepared.wrong();
        else maxError = prepared.error();
      }
      // nccl-tests warms up, then meets in a host barrier outside NCCL. Here the barrier is a
      // collective of the library under test, and a different call between the warm-up and the
      // timed calls sends V8 back to re-optimise the small-call path while they run: 8 B
      // all-reduce on 2 thread ranks averaged 11-16 us over 10000 calls timed after a barrier,
      // 1.3 us without one. So the ranks meet first, and the warm-up calls, collectives
      // themselves, keep them in step up to the timed ones.
      await comm.barrier();
      const warmupCalls = warmupCallsFor(size, options.warmupIters, options.warmupSmall ?? 0);
      const timeUs = await timeCalls(prepared.call, warmupCalls, options.iters);
      const last = comm.flightRecords().records.at(-1);
      row.push({
        timeUs,
        wrong,
        algorithm: last?.algorithm,
        ...(last?.wireBytes === undefined ? {} : { wireBytes: last.wireBytes }),
        ...(maxError === undefined ? {} : { maxError }),
      });
    }
    rows.push(row);
  }
  return rows;
}

/**
 * `warmups` untimed calls, then the mean us of `iters` timed ones. A function of its own, so that
 * the loops V8 runs hot are these few lines: in measureRank, its whole body became hot within the
 * first rows, and V8's baseline compile of it (a pause of about 200 us on this VM) fell inside a
 * row's 20 timed calls (the 128 B row of nccl-tests' sequence, in every run; bench/RESULTS.md).
 */
async function timeCalls(call: () => Promise<void>, warmups: number, iters: number): Promise<number> {
  for (let i = 0; i < warmups; i++) await call();
  const start = performance.now();
  for (let i = 0; i < iters; i++) await call();
  return ((performance.now() - start) * 1000) / Math.max(1, iters);
}

/** The registered buffers, sized for the largest size; each size runs on their first elements. */
export interface Pool {
  readonly input: TypedArray;
  readonly output: TypedArray;
}

/**
 * Allocates the pool and writes every byte of it. A page that was never written reads as the
 * kernel's one shared zero page, which stays in cache: copies and reductions from such a buffer
 * measured 1.4-2x faster than from real memory on this machine (2 ranks, 8 MB all-reduce: 9.9-18.8
 * GB/s against 6.8-7.5). Device buffers in nccl-tests are real memory, so these must be too,
 * whether or not the run checks results.
 */
export function allocatePool(
  comm: Pick<Communicator, 'alloc'>,
  dtype: DType,
  inputCount: number,
  outputCount: number,
): Pool {
  const pool = { input: comm.alloc(dtype, inputCount), output: comm.alloc(dtype, outputCount) };
  for (const array of [pool.input, pool.output])
    new Uint8Array(array.buffer, array.byteOffset, array.byteLength).fill(PAGE_PATTERN);
  return pool;
}

/** A byte that makes a normal, finite value of every dtype (float32 0.0115, float16 1.06, bfloat16 0.0115). */
const PAGE_PATTERN = 0x3c;

/**
 * The call `tsccl bench` times for one op, size and placement on the pool's buffers (undefined
 * where the placement does not apply), with what loads and checks its data. bench/regret.mjs
 * prepares one per algorithm to interleave them.
 */
export function prepare(
  op: BenchOp,
  comm: Communicator,
  options: BenchOptions,
  total: number,
  inPlace: boolean,
  pool: Pool,
): Prepared | undefined {
  const { dtype, root, algorithm } = options;
  const redop: ReduceOp = op.reduces ? options.redop : 'sum';
  const n = comm.size;
  const me = comm.rank;
  const counts = op.counts(total, n);
  const info = dtypeInfo(dtype);
  const data = (rank: number, length: number) => makeData(dtype, redop, rank, length, 0);
  const all = (length: number) => Array.from({ length: n }, (_, r) => data(r, length));
  const block = (a: TypedArray, i: number, b: number) => a.subarray(i * b, (i + 1) * b) as TypedArray;
  const b = counts.param;
  const name: BenchOpName = op.name;

  if (inPlace && !hasInPlace(op)) return undefined;
  if (name === 'sendrecv') {
    const input = pool.input.subarray(0, total) as TypedArray;
    const output = pool.output.subarray(0, total) as TypedArray;
    const from = (me - 1 + n) % n;
    return {
      call: async () => {
        await Promise.all([comm.send(input, (me + 1) % n), comm.recv(output, from)]);
      },
      fill: () => input.set(data(me, total) as never),
      wrong: () => countDifferences(output, data(from, total)),
    };
  }

  const input = pool.input.subarray(0, inPlace ? Math.max(counts.send, counts.recv) : counts.send) as TypedArray;
  const output = inPlace ? undefined : (pool.output.subarray(0, counts.recv) as TypedArray);
  const result = (offset: number, length: number) =>
    (output ?? input).subarray(output ? 0 : offset, (output ? 0 : offset) + length) as TypedArray;
  const isRoot = me === root;
  const compression = options.compression;
  // Compressed results are close, not equal: their check measures how close.
  const compare = (got: () => TypedArray, want: () => TypedArray): Pick<Prepared, 'wrong' | 'error'> =>
    compression === undefined
      ? { wrong: () => countDifferences(got(), want()) }
      : { wrong: () => 0, error: () => compareResults(info, got(), want()).relativeError };
  const nothing = compression === undefined ? { wrong: () => 0 } : { wrong: () => 0, error: () => 0 };
  switch (name) {
    case 'all_reduce':
      return {
        call: () => comm.allReduce(input, { op: redop, output, algorithm, dtype, compression }),
        fill: () => input.set(data(me, total) as never),
        ...compare(
          () => result(0, total),
          () => referenceReduce(dtype, redop, all(total)),
        ),
      };
    case 'reduce':
      return {
        call: () => comm.reduce(input, { op: redop, root, output, algorithm, dtype, compression }),
        fill: () => input.set(data(me, total) as never),
        ...(isRoot
          ? compare(
              () => result(0, total),
              () => referenceReduce(dtype, redop, all(total)),
            )
          : nothing),
      };
    case 'broadcast':
      return {
        call: () => comm.broadcast(input, { root, output, algorithm, dtype, compression }),
        fill: () => input.set((isRoot ? data(root, total) : new info.ctor(total)) as never),
        ...compare(
          () => result(0, total),
          () => data(root, total),
        ),
      };
    case 'all_gather':
      return {
        call: () =>
          comm.allGather(inPlace ? input : (input.subarray(0, b) as TypedArray), {
            output,
            algorithm,
            dtype,
            compression,
          }),
        fill: () => input.set(data(me, b) as never, inPlace ? me * b : 0),
        ...compare(
          () => result(0, n * b),
          () => concatenate(dtype, all(b)),
        ),
      };
    case 'reduce_scatter':
      return {
        call: () => comm.reduceScatter(input, { op: redop, output, algorithm, dtype, compression }),
        fill: () => input.set(data(me, n * b) as never),
        ...compare(
          () => result(me * b, b),
          () => block(referenceReduce(dtype, redop, all(n * b)), me, b),
        ),
      };
    case 'alltoall':
      return {
        call: () => comm.allToAll(input, { output, algorithm, dtype }),
        fill: () => input.set(data(me, n * b) as never),
        wrong: () =>
          countDifferences(
            result(0, n * b),
            concatenate(
              dtype,
              all(n * b).map((a) => block(a, me, b)),
            ),
          ),
      };
    case 'gather': {
      const rootInPlace = inPlace && isRoot;
      const source = rootInPlace ? input : (input.subarray(0, b) as TypedArray);
      return {
        call: () => comm.gather(source, { root, output: isRoot ? output : undefined, algorithm, dtype }),
        fill: () => input.set(data(me, b) as never, rootInPlace ? me * b : 0),
        wrong: () => (isRoot ? countDifferences(result(0, n * b), concatenate(dtype, all(b))) : 0),
      };
    }
    case 'scatter': {
      if (!isRoot) {
        const target = output ?? (input.subarray(0, b) as TypedArray);
        return {
          call: () => comm.scatter(target, { root, algorithm, dtype }),
          fill: () => target.fill((info.isBigInt ? 0n : 0) as never),
          wrong: () => countDifferences(target, block(data(root, n * b), me, b)),
        };
      }
      return {
        call: () => comm.scatter(input, { root, output, algorithm, dtype }),
        fill: () => input.set(data(root, n * b) as never),
        wrong: () => countDifferences(result(me * b, b), block(data(root, n * b), me, b)),
      };
    }
  }
}
