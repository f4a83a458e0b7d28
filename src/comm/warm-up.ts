import { availableParallelism } from 'node:os';
import { paramInt } from '../config/params.js';
import { log } from '../log.js';
import { compilingEagerly } from './warm-up-compile.js';
import { LL_SLOTS } from '../transport/shm/mailbox.js';
import type { CollectiveOptions, ReduceOptions, RootedOptions } from './call-options.js';
import type { Communicator } from './communicator.js';

/**
 * Small calls V8 has not yet compiled run 5-50x slower than warm ones, for the first few
 * thousand calls (docs/tuning.md, WARM_UP_SMALL_CALLS). This many 8 B all-reduces take the path
 * through TurboFan on a 2-core machine; the other calls of a round ride along.
 */
export const WARM_UP_SMALL_CALLS = 8192;
/** Calls of each round: one-shot all-reduces (the last carries the vote to stop), then the rest. */
const ROUND_SMALL_CALLS = 32;
const ROUND_OTHER_SMALL_CALLS = 8;
const ROUND_MID_CALLS = 2;
/** A mid-size call: above every one-shot slot (64 KiB per thread rank), so it runs a schedule. */
const MID_ELEMENTS = 32 * 1024;
/**
 * Over TCP, an all-reduce of 8 KiB: above the one-shot path, it runs a schedule on frames of its
 * own size, a path the mid-size calls (split into larger pieces) do not take, and a fresh job's
 * first calls compiled it while they ran (bench/RESULTS.md, "Init's warm-up over TCP: a schedule
 * of small frames").
 */
const FRAMED_ELEMENTS = 2048;
/**
 * An unregistered buffer larger than a slot's LL_INLINE_BYTES: copied into a data area. Below
 * the 2 KiB where a reduction into the caller's array stages blocks through the arena: staged
 * here, the staging blocks (768 KiB a rank) moved the arena's growth and its page faults into
 * a job's first 2 KiB calls, about 20 ms on 8 thread ranks (docs/tuning.md, "Arrays of one kind").
 */
const COPIED_ELEMENTS = 256;
/**
 * An unregistered buffer above the 32 B a flag's cache line carries and within the slot's
 * LL_INLINE_BYTES: copied into the slot with one `set`, and out of it by each reader. Without
 * it a fresh job's first 33-224 B calls threw away the compiled publish and read code that had
 * not seen this path (bench/RESULTS.md, "Init's warm-up: the slot's copied path").
 */
const SLOT_COPIED_ELEMENTS = 32;
/**
 * Thread ranks, in the first round of each warm-up communicator (before V8 optimises anything): a
 * stream of small broadcasts that the readers join late, so that the root fills its ring of slots
 * and waits for its slowest reader. A job's first stream of more than LL_SLOTS broadcasts
 * otherwise took that wait for the first time: V8 threw away the compiled publish, which had
 * never run it, and compiled it again on every rank's thread inside the stream (bench/RESULTS.md,
 * "Init's warm-up: a broadcast's root waiting for its readers").
 */
const RUN_AHEAD_CALLS = LL_SLOTS + 8;
/** How late the readers join the stream: far longer than the root takes to fill its slots. */
const READERS_LATE_MS = 1;
/** A registered buffer of at least BY_REFERENCE_MIN_BYTES, which one-shot calls publish by reference. */
const BY_REFERENCE_ELEMENTS = 1024;
/**
 * Small all-reduces besides float32 sums that jobs make (losses and metrics in doubles, counts
 * and flags in integers, averaged gradients, maxima). Warmed on float32 sums alone, the path's
 * compiled code expected a Float32Array wherever it read the user's array and a sum wherever it
 * chose the reduction, and a job's first calls of another kind threw that code away and ran
 * unoptimised until V8 compiled it again (bench/RESULTS.md, "A fresh job's first calls of other
 * kinds than float32 sums").
 */
const OTHER_SMALL_REDUCTIONS = [
  { ctor: Float64Array, op: 'sum', inPlace: false },
  { ctor: Int32Array, op: 'sum', inPlace: false },
  { ctor: Float32Array, op: 'avg', inPlace: true },
  { ctor: Float32Array, op: 'max', inPlace: false },
] as const;

/**
 * The warm-up's time limit for ranks with `machineThreads` busy threads on `cores` cores: the
 * budget (TSCCL_WARMUP_MS) where each has a core of its own, and as much more as they outnumber
 * the cores, since each then runs (and compiles) a share of a core. 8 thread ranks on 2 cores
 * cut at 1 s had made a fifth of the warm-up's calls, and their first calls of 8 B to 128 KiB
 * compiled the rest (bench/RESULTS.md, "Init's warm-up where ranks outnumber the cores").
 */
export function warmUpLimitMs(budgetMs: number, machineThreads: number, cores: number): number {
  return budgetMs * Math.max(1, machineThreads / Math.max(1, cores));
}

export interface WarmUpReport {
  /** Calls made, on every rank alike. */
  readonly calls: number;
  readonly ms: number;
  /** The time it was allowed (warmUpLimitMs of TSCCL_WARMUP_MS). */
  readonly limitMs: number;
  /** Whether it stopped at that limit before WARM_UP_SMALL_CALLS. */
  readonly cut: boolean;
}

/**
 * Runs the paths of small and mid-size collectives on a private child of `world` until V8 has
 * compiled them, so that the job's own first calls run at their warm speed: a collective step of
 * init, as NCCL's communicator setup is. It stops on every rank at the same call: each round
 * ends with an all-reduce of each rank's vote (done, or past TSCCL_WARMUP_MS). The child is
 * destroyed after; the world's calls and records start at #1 as before. Undefined when off
 * (TSCCL_WARMUP_MS=0) or alone.
 */
export async function warmUp(world: Communicator): Promise<WarmUpReport | undefined> {
  const budgetMs = paramInt('TSCCL_WARMUP_MS');
  if (budgetMs === 0 || world.size < 2) return undefined;
  const cores = availableParallelism();
  const limitMs = warmUpLimitMs(budgetMs, world.machineThreads, cores);
  const started = performance.now();
  // A first child runs one round and is destroyed before V8 optimises anything: destroying a
  // communicator stores into fields no call stores into (its state, the arena's caches), and V8
  // throws away every optimised function that relied on those fields when that happens. Done
  // here, it costs nothing; done only after the warm-up, it threw away the warmed path and the
  // world's first few thousand calls waited for its recompiles (bench/RESULTS.md).
  const first = await warmRounds(await world.sibling('warmup-first'), () => true);
  // Only now: the first child's calls must not be optimised before it is destroyed (see above).
  const { calls, smallCalls } = await compilingEagerly(world.transportKind, async () =>
    warmRounds(
      await world.sibling('warmup'),
      (smallCalls) => smallCalls >= WARM_UP_SMALL_CALLS,
      () => performance.now() - started >= limitMs,
    ),
  );
  const cut = smallCalls < WARM_UP_SMALL_CALLS;
  const ms = performance.now() - started;
  const total = first.calls + calls;
  log(
    'INFO',
    () =>
      `${world.name} rank ${world.rank}: warmed the small-call path with ${total} calls in ${ms.toFixed(0)} ms${cut ? ` (stopped at ${limitMs.toFixed(0)} ms: TSCCL_WARMUP_MS=${budgetMs} for ${world.machineThreads} busy threads on ${cores} cores)` : ''}`,
  );
  last = { calls: total, ms, limitMs, cut };
  return last;
}

/**
 * Rounds of small, registered and mid-size calls on `comm` until every rank's `done` (given the
 * small calls so far) or `late` holds: each round ends with an all-reduce of the votes, so all
 * stop at the same call. `comm` is destroyed after.
 */
async function warmRounds(
  comm: Communicator,
  done: (smallCalls: number) => boolean,
  late: () => boolean = () => false,
): Promise<{ calls: number; smallCalls: number }> {
  const n = comm.size;
  const lateness = new Int32Array(new SharedArrayBuffer(4));
  const small = new Float32Array(2);
  const smallOut = new Float32Array(2);
  const gathered = new Float32Array(2 * n);
  const copied = new Float32Array(COPIED_ELEMENTS);
  const copiedOut = new Float32Array(COPIED_ELEMENTS);
  const slotCopied = new Float32Array(SLOT_COPIED_ELEMENTS);
  const slotCopiedOut = new Float32Array(SLOT_COPIED_ELEMENTS);
  const vote = new Float32Array(2);
  const votes = new Float32Array(2);
  const others = OTHER_SMALL_REDUCTIONS.map(({ ctor, op, inPlace }) => {
    const input = new ctor(2);
    return { input, options: inPlace ? { op } : { op, output: new ctor(2) } };
  });
  const framed = new Float32Array(FRAMED_ELEMENTS);
  const framedOut = new Float32Array(FRAMED_ELEMENTS);
  const mid = new Float32Array(MID_ELEMENTS);
  const midOut = new Float32Array(MID_ELEMENTS);
  const registered = comm.alloc('float32', BY_REFERENCE_ELEMENTS);
  const registeredOut = comm.alloc('float32', BY_REFERENCE_ELEMENTS);
  const reduceShapes = reduceOptionShapes(smallOut);
  const copiedShapes = reduceOptionShapes(copiedOut);
  const gatherShapes = gatherCallShapes(small, gathered);
  const broadcastShapes = broadcastOptionShapes(smallOut);
  // Only thread ranks copy through a slot; over TCP these calls left the 8 B path's compiled
  // code slower (bench/RESULTS.md, "Options of every shape in init's warm-up").
  const slotCopies = comm.transportKind === 'shm';
  let calls = 0;
  let smallCalls = 0;
  let succeeded = false;
  try {
    for (;;) {
      // A round's small all-reduces take one shape, so that all but its first reuse their plan,
      // as a job's repeated calls do; each round takes the next.
      const round = smallCalls / ROUND_SMALL_CALLS;
      const reduceOptions = reduceShapes[round % reduceShapes.length];
      // The slot's copied path in the first half of the rounds only: warmed to the end, V8 was
      // still compiling for it during a fresh job's first calls, pauses of 15-20 us in one call
      // of every few dozen (bench/RESULTS.md, "Init's warm-up: the slot's copied path").
      const slotPath = slotCopies && smallCalls < WARM_UP_SMALL_CALLS / 2;
      for (let i = 1; i < ROUND_SMALL_CALLS; i++) await comm.allReduce(small, reduceOptions);
      // Once, after calls enough for V8 to keep feedback on the arena's views: the path a view
      // takes after another rank grew the arena.
      if (round === 0) comm.rereadArena();
      for (let i = 0; i < ROUND_OTHER_SMALL_CALLS; i++) {
        const k = round + i;
        const [gatherInput, gatherOptions] = gatherShapes[k % gatherShapes.length];
        await comm.allGather(gatherInput, gatherOptions);
        await comm.broadcast(small, broadcastShapes[k % broadcastShapes.length]);
        await comm.allReduce(registered, { output: registeredOut });
        if (slotCopies) await comm.allReduce(copied, copiedShapes[k % copiedShapes.length]);
        if (slotPath) await comm.allReduce(slotCopied, { output: slotCopiedOut });
      }
      // Each twice in a row: the second reuses the first's plan, a path of its own.
      for (const { input, options } of others) {
        await comm.allReduce(input, options);
        await comm.allReduce(input, options);
      }
      const runAhead = slotCopies && round === 0;
      if (runAhead) {
        // A blocking sleep: a timer's turn of the event loop made init 50-100 ms longer.
        if (comm.rank !== 0) Atomics.wait(lateness, 0, 0, READERS_LATE_MS);
        for (let i = 0; i < RUN_AHEAD_CALLS; i++) await comm.broadcast(small, { output: smallOut });
      }
      for (let i = 0; i < ROUND_MID_CALLS; i++) await comm.allReduce(mid, { output: midOut });
      // Thread ranks, in each warm-up communicator's first round only (the first child's runs
      // before V8 optimises anything): a mid-size call in place, whose steps write where a
      // posted send may still be read, so the schedule path's code is compiled with feedback
      // for that test too; compiled without it, a job's first in-place schedule call threw it
      // away (bench/RESULTS.md, "Init's warm-up where ranks outnumber the cores"). Over TCP
      // every round makes in-place calls (below).
      const inPlaceOnce = slotCopies && round === 0;
      if (inPlaceOnce) await comm.allReduce(midOut);
      if (!slotCopies) {
        // Over TCP the schedule path's in-place calls too: with out-of-place calls alone it was
        // still compiling its steps in a fresh job's 32-128 KiB in-place calls (bench/RESULTS.md).
        await comm.allReduce(midOut);
        await comm.allReduce(framed, { output: framedOut });
        await comm.allReduce(framedOut);
      }
      await comm.barrier();
      await comm.barrier();
      smallCalls += ROUND_SMALL_CALLS;
      calls +=
        ROUND_SMALL_CALLS +
        (slotCopies ? 4 : 3) * ROUND_OTHER_SMALL_CALLS +
        (slotPath ? ROUND_OTHER_SMALL_CALLS : 0) +
        (runAhead ? RUN_AHEAD_CALLS : 0) +
        2 * others.length +
        ROUND_MID_CALLS +
        (inPlaceOnce ? 1 : 0) +
        (slotCopies ? 0 : 3) +
        2;
      vote[0] = done(smallCalls) ? 1 : 0;
      vote[1] = late() ? 1 : 0;
      await comm.allReduce(vote, { output: votes });
      if (votes[0] > 0 || votes[1] > 0) break;
    }
    succeeded = true;
  } finally {
    // After a failure a peer may still read the registered arrays in place: the arena takes them
    // back when they are collected, as a user's arrays after a failed call.
    if (succeeded) {
      comm.free(registered);
      comm.free(registeredOut);
    }
    await comm.destroy();
  }
  return { calls, smallCalls };
}

// Options objects of the shapes callers pass: in place or not, the reduction or root named or
// not, the dtype given, tsccl bench's five keys. V8 compiles the code that reads a caller's
// options for the shapes it has seen, and a shape it has not seen throws that code away at the
// job's first call (docs/tuning.md); past four shapes a read accepts any. The calls sum or copy
// zeros, so in place changes nothing.

function reduceOptionShapes(output: Float32Array): (ReduceOptions | undefined)[] {
  return [
    { output },
    { op: 'sum', output },
    undefined,
    { output, op: 'sum' },
    { op: 'sum' },
    { output, dtype: 'float32' },
    { op: 'sum', output, algorithm: undefined, dtype: 'float32', compression: undefined },
    {},
  ];
}

function broadcastOptionShapes(output: Float32Array): (RootedOptions | undefined)[] {
  return [
    { output },
    { root: 0 },
    undefined,
    { root: 0, output },
    { output, root: 0 },
    { root: 0, output, algorithm: undefined, dtype: 'float32', compression: undefined },
    {},
  ];
}

/** All-gathers: out of place from `input` into `output`, or in place in `output`. */
function gatherCallShapes(input: Float32Array, output: Float32Array): [Float32Array, CollectiveOptions | undefined][] {
  return [
    [input, { output }],
    [output, undefined],
    [input, { output, dtype: 'float32' }],
    [output, {}],
    [input, { output, algorithm: undefined, dtype: 'float32', compression: undefined }],
    [output, { output: undefined, algorithm: undefined, dtype: 'float32', compression: undefined }],
  ];
}

let last: WarmUpReport | undefined;

/** What this rank's (thread's or process's) init warm-up did, if it ran. */
export function lastWarmUp(): WarmUpReport | undefined {
  return last;
}
