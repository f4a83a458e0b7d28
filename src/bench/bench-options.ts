import type { DType } from '../dtypes/dtype.js';
import type { ReduceOp } from '../kernels/reduce-op.js';
import type { BenchOpName } from '../algorithms/bench-ops.js';
import type { CompressionFormat } from '../compress/compression-spec.js';

/** One benchmark run, as `tsccl bench` flags describe it. */
export interface BenchOptions {
  readonly op: BenchOpName;
  readonly ranks: number;
  readonly minBytes: number;
  readonly maxBytes: number;
  readonly stepFactor: number;
  readonly stepBytes: number;
  readonly iters: number;
  readonly warmupIters: number;
  /** Warm-up calls of sizes up to 256 KiB, at least (`--warmup_small`, see warm-up.ts); absent: warmupIters alone. */
  readonly warmupSmall?: number;
  readonly check: boolean;
  readonly dtype: DType;
  readonly redop: ReduceOp;
  readonly root: number;
  readonly algorithm?: string;
  readonly timeoutMs: number;
  /** Ranks as processes over TCP instead of threads over shared memory. */
  readonly procs?: boolean;
  /** The wire format of the timed calls (compressible ops only). */
  readonly compression?: CompressionFormat;
}

/** One placement (out-of-place or in-place) of one size, as a rank measured it. */
export interface RankMeasurement {
  readonly timeUs: number;
  readonly wrong: number;
  /** What ran the last timed call on this rank (the tuner's choice unless forced). */
  readonly algorithm?: string;
  /** Compressed calls: the encoded bytes of the message, and the checked call's largest error over the largest exact value. */
  readonly wireBytes?: number;
  readonly maxError?: number;
}

export interface BenchRow {
  readonly op: BenchOpName;
  readonly bytes: number;
  readonly count: number;
  readonly dtype: DType;
  readonly redop: string;
  readonly root: number;
  readonly inPlace: boolean;
  /** Mean time per call over iterations, averaged over ranks (nccl-tests' default -a 1). */
  readonly timeUs: number;
  readonly algbwGBs: number;
  readonly busbwGBs: number;
  /** Elements that differed from the reference, summed over ranks; null when not checked. */
  readonly wrong: number | null;
  readonly ranks: number;
  /** What ran the calls on rank 0 (the tuner's choice unless forced); JSON only, as nccl-tests has no column for it. */
  readonly algorithm?: string;
  /** Compressed calls: the encoded bytes of the message on rank 0, and the largest error over the ranks (relative to the largest exact value; null when not checked). */
  readonly wireBytes?: number;
  readonly maxError?: number | null;
}
