import type { SwitchKind } from '../topology/catalog.js';

/**
 * How an in-switch reduction (NVLink SHARP, "NVLS") fills its pipeline. NCCL runs NVLS as
 * `channels x heads` concurrent operations (heads: one per GPU on the switch), each moving the
 * data a chunk at a time; it shrinks the chunk for smaller calls so that every operation still
 * gets several (src/enqueue.cc, NCCL_NVLS_CHUNKSIZE 128 KiB, halved while the call is below
 * 64, 8 and 2 chunks per operation, down to 16 KiB). Before the operations stream at the
 * switch's rate, each one's first chunks must pass the read-reduce and multicast-store stages:
 * that fill costs `depth` chunk times of one operation, which is why a mid-size call reaches a
 * lower bus bandwidth than the chunk-independent rate of large ones.
 */
const MAX_CHUNK_BYTES = 128 * 1024;
/**
 * Chunk times of one operation before the pipeline streams. Fitted to [C2] (8 x H100): the
 * fit gives 4.1; with 4, C2's five sizes from 1 MB to 8 GB are within 3%.
 */
const PIPELINE_DEPTH = 4;

/** NCCL's NVLS chunk for a call of `bytes` run as `operations` concurrent operations. */
export function nvlsChunkBytes(bytes: number, operations: number): number {
  let chunk = MAX_CHUNK_BYTES;
  if (bytes < 64 * operations * chunk && chunk > 65536) chunk = 65536;
  if (bytes < 8 * operations * chunk && chunk > 32768) chunk = 32768;
  if (bytes < 2 * operations * chunk && chunk > 16384) chunk = 16384;
  return chunk;
}

/**
 * Microseconds to fill the pipeline of an NVLS all-reduce of `bytes` on `ranks` GPUs, whose
 * switch ports reduce at `rate` bytes per microsecond each.
 */
export function nvlsFillUs(bytes: number, ranks: number, switchKind: SwitchKind, rate: number): number {
  const operations = switchKind.reductionChannels * ranks;
  return (PIPELINE_DEPTH * nvlsChunkBytes(bytes, operations) * operations) / rate;
}
