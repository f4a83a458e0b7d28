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

/**
 * GPUs beyond which an in-switch reduction's bus bandwidth stops growing: a board's eight.
 * Per GPU and direction NVLS moves (1 + 1/n) of the data, so counted by links its bus
 * bandwidth (the data times 2(n-1)/n over the time) would grow with n, from 1.56x a link's rate
 * on 8 GPUs towards 2x. It does not: NCCL's cost model gives NVLS one bus bandwidth whatever the
 * rank count (src/graph/tuning.cc: channels x NVLink bandwidth x nvlsEfficiency, no rank
 * term), and a GB200 NVL72 rack's 72 GPUs measured 835-839 GB/s at 4-8 GB (coreweave/nccl-tests
 * pull request 43) where 8 B200 reach 830 (NVIDIA/nccl issue 1807). The reduce warps wait on
 * every GPU's copy for each load, so more GPUs lengthen each load rather than widen the stream.
 */
const SATURATION_RANKS = 8;

/**
 * Microseconds an NVLS all-reduce of `bytes` on `ranks` GPUs takes at least because its bus
 * bandwidth saturates (0 up to SATURATION_RANKS, where the links bound it), for switch ports that
 * reduce at `rate` bytes per microsecond each.
 */
export function nvlsSaturatedUs(bytes: number, ranks: number, rate: number): number {
  if (ranks <= SATURATION_RANKS) return 0;
  const saturatedBusRate = (rate * 2 * (SATURATION_RANKS - 1)) / (SATURATION_RANKS + 1);
  return (bytes * 2 * (ranks - 1)) / ranks / saturatedBusRate;
}
