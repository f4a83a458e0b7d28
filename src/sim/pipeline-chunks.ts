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
/**
 * A chain (ring broadcast and reduce, the ranks of a host in a tree all-reduce) takes n-2 more
 * rounds to fill than a tree, so it is cut finer: NCCL streams it in its 512 KiB steps, and 256
 * rounds keep the fill of an 8-rank chain to 2% while the flow engine moves at most 256 pieces
 * per rank and channel.
 */
const CHAIN_MAX_ROUNDS = 256;
/** Collective/algorithm pairs that forward each piece along a chain of ranks. */
const CHAINS: ReadonlySet<string> = new Set(['broadcast/ring', 'reduce/ring', 'allReduce/tree']);

/** Does this call forward pieces along a chain of the ranks (a ring broadcast or reduce, a tree all-reduce's hosts)? */
export function isChain(call: { readonly collective: string; readonly algorithm: string }): boolean {
  return CHAINS.has(`${call.collective}/${call.algorithm}`);
}

/** The chunk in elements for a call of `count` elements of `elementBytes` (0 would mean one piece). */
export function pipelineChunkCount(
  call: {
    readonly chunkCount?: number;
    readonly elementBytes: number;
    readonly collective: string;
    readonly algorithm: string;
  },
  count: number,
): number {
  if (call.chunkCount !== undefined) return call.chunkCount;
  const rounds = isChain(call) ? CHAIN_MAX_ROUNDS : MAX_ROUNDS;
  return Math.max(1, Math.floor(Math.max(MIN_CHUNK_BYTES, (count * call.elementBytes) / rounds) / call.elementBytes));
}
