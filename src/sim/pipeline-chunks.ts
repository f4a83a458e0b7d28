/**
 * How non-ring algorithms are chunked in the simulator. A call that names its chunk (the
 * executor's, when the simulator predicts this machine) keeps it; otherwise a GPU library's
 * pipelining is assumed: pieces of at least MIN_CHUNK_BYTES, and at most MAX_ROUNDS of them per
 * call, as a library keeps a bounded number of steps in flight. The flow engine builds its
 * schedules with this chunk and the analytical model counts the same rounds (pieceRoundCount),
 * so the two agree.
 */
const MIN_CHUNK_BYTES = 512 * 1024;
const MAX_ROUNDS = 16;

/** The chunk in elements for a call of `count` elements of `elementBytes` (0 would mean one piece). */
export function pipelineChunkCount(call: { readonly chunkCount?: number; readonly elementBytes: number }, count: number): number {
  if (call.chunkCount !== undefined) return call.chunkCount;
  return Math.max(1, Math.floor(Math.max(MIN_CHUNK_BYTES, (count * call.elementBytes) / MAX_ROUNDS) / call.elementBytes));
}
