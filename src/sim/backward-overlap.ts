/** One gradient bucket's all-reduce on a rank's timeline, in us from the start of the last backward pass. */
export interface BucketSpan {
  readonly bytes: number;
  /** Backward has produced every gradient of the bucket. */
  readonly readyUs: number;
  /** The all-reduce starts: the bucket is ready and the previous bucket's all-reduce is done (one stream). */
  readonly startUs: number;
  readonly endUs: number;
}

export interface BackwardOverlap {
  readonly buckets: readonly BucketSpan[];
  /** Time from the end of backward until the last bucket's all-reduce ends: what overlap leaves on the step. */
  readonly exposedUs: number;
  /** What the all-reduces take back to back: what the step would pay without overlap. */
  readonly serialUs: number;
}

/**
 * The pieces tsccl/train cuts its last gradient bucket into (gradient-buckets.ts): nothing after
 * that bucket hides its all-reduce, so it goes out a piece at a time as backward produces it,
 * each piece at least PyTorch DDP's first bucket, 1 MiB, the size it judges worth a call.
 */
export const TAIL_PIECE_BYTES = 1 << 20;

/**
 * Data parallelism's gradient reduction overlapped with backward, as tsccl/train does it:
 * backward produces the gradients from the last layer to the first, evenly over `backwardUs`;
 * they are reduced in buckets of `bucketBytes` as PyTorch DDP's, the first layers' bucket last
 * and cut into pieces of `tailPieceBytes` (TAIL_PIECE_BYTES), each all-reduce starting once its
 * bucket is ready and the previous one has ended. `timeOf` gives an all-reduce's time by its bytes.
 */
export function backwardOverlap(
  backwardUs: number,
  gradientBytes: number,
  {
    bucketBytes,
    timeOf,
    tailPieceBytes = TAIL_PIECE_BYTES,
  }: { readonly bucketBytes: number; readonly timeOf: (bytes: number) => number; readonly tailPieceBytes?: number },
): BackwardOverlap {
  const buckets: BucketSpan[] = [];
  let produced = 0;
  let streamFree = 0;
  let serialUs = 0;
  while (produced < gradientBytes) {
    const left = gradientBytes - produced;
    const bytes = left <= bucketBytes ? Math.min(left, tailPieceBytes) : bucketBytes;
    produced += bytes;
    const readyUs = (backwardUs * produced) / gradientBytes;
    const startUs = Math.max(readyUs, streamFree);
    const timeUs = timeOf(bytes);
    serialUs += timeUs;
    streamFree = startUs + timeUs;
    buckets.push({ bytes, readyUs, startUs, endUs: streamFree });
  }
  return { buckets, exposedUs: Math.max(0, streamFree - backwardUs), serialUs };
}
