import { runBench } from '../bench/run-bench.js';
import { SMALL_CALL_WARMUP } from '../bench/warm-up.js';
import type { BenchOpName } from '../algorithms/bench-ops.js';
import type { BenchOptions } from '../bench/bench-options.js';
import { ONE_SHOT } from '../exec/one-shot.js';
import {
  type LocalProfile,
  MIB,
  PROFILE_WORKING_SET,
  TCP_RATE_BYTES,
  copyAtProfileWorkingSet,
  foldAtProfileWorkingSet,
} from '../topology/local-profile.js';
import type { LocalDetection } from '../topology/local-topology.js';
import { measureCoreSwitchUs } from './core-switch.js';
import { fitOversubscribedHandOff } from './fit-hand-off.js';
import { fitOneShotRate } from './fit-one-shot.js';
import { CopyTierSampler } from './copy-tiers.js';
import { PeerCacheSampler, summarizePeerCache } from './peer-cache.js';
import { median } from './median.js';
import { type SmallCall, timeSmallCalls } from './small-calls.js';

/** Large calls: the size whose sendrecv gives tcp.gbps. */
const LARGE = TCP_RATE_BYTES;
/** Sizes of a range of timings grow by this factor. */
const SIZE_STEP = 4;
/** The 2-process sendrecvs of tcp.sizeTiers: 128 KiB to 8 MiB, one launch per run. */
const TCP_TIERS = { fromBytes: 128 * 1024, upToBytes: 8 * MIB } as const;
/**
 * The 2-process stream of tcp.streamGBps: a direct broadcast of 64 MiB in place, after 5 calls,
 * as a connection's first calls move less (docs/tuning.md).
 */
const STREAM = { bytes: 64 * MIB, warmupIters: 5 } as const;
/** Timed calls per run: of LARGE and up, and below. */
const LARGE_ITERS = 10;
const SMALL_ITERS = 200;
/**
 * The ring on twice as many ranks as cores that gives the oversubscribed hand-off, fitted through
 * the simulator: at 8 B its time is hand-offs end to end. It keeps the median of its launches:
 * they vary with how the ranks meet the cores, which is what a hand-off
 * costs. Of that hand-off only a same-core switch takes a core (core-switch.ts); the rest is
 * latency, which other ranks' copies hide (docs/tuning.md: why a second ring no longer takes part).
 */
const HAND_OFF_RING = { op: 'all_reduce', collective: 'allReduce', bytes: 8 } as const;
/**
 * Launches of that ring, more than of the other timings: every 4- and 8-rank prediction follows
 * from them, and they vary most (docs/tuning.md).
 */
function oversubscribedRingLaunches(runs: number): number {
  return 2 * runs + 1;
}
/** A one-shot all-reduce well past its fixed cost and within a slot: it gives shm.oneShotGBps. */
const ONE_SHOT_BYTES = 32 * 1024;
/** The TCP stream whose pieces give the per-message overhead: 64 KiB whole and in 64 pieces. */
const STREAM_BYTES = 64 * 1024;
const STREAM_PIECES = 64;
/**
 * Times the small calls are timed again when the 2-rank recursive doubling and ring contradict
 * each other (the ring read faster, which gives no hand-off at all; docs/tuning.md).
 */
const HAND_OFF_RETRIES = 3;
/**
 * Blocks in which the small calls take turns in one launch (small-calls.ts): a launch's first
 * blocks run before its cores have settled, so its median needs a dozen blocks after them.
 */
const SMALL_BLOCKS_PER_LAUNCH = 15;
const TIMEOUT_MS = 120_000;
const RECURSIVE_DOUBLING_8B: SmallCall = { op: 'all_reduce', bytes: 8, algorithm: 'recursive_doubling' };
const RING_8B: SmallCall = { op: 'all_reduce', bytes: 8, algorithm: 'ring' };

/** How one timing runs: a forced algorithm, the pieces it moves in, its launches, and the largest size of a range. */
interface Timing {
  readonly algorithm?: string;
  /** Time the in-place rows (the bench times both; out of place unless this is set). */
  readonly inPlace?: boolean;
  /** Untimed calls first, where the size's own rule would give too few. */
  readonly warmupIters?: number;
  readonly pieceBytes?: number;
  readonly launches?: number;
  readonly upToBytes?: number;
}

/**
 * Measures this machine for the profile (`tsccl tune`). Calls of 64 KiB and up are timed over
 * `runs` repeated launches (medians); the small 2-rank calls of each transport together in one
 * launch, taking turns in 15 blocks (medians; small-calls.ts), each call's fastest of `runs` such
 * launches (fastestOfLaunches). For each transport,
 * all-reduce of 8 B on 2 ranks by recursive doubling = callUs + messageUs (one exchange), and by
 * ring = callUs + 2 x messageUs (two steps).
 * Process ranks are also measured on a sendrecv of 16 MiB minus one of 8 B (tcp.gbps, each way)
 * and of 128 KiB to 8 MiB (tcp.sizeTiers),
 * a 2-rank broadcast of 64 MiB in place, one way (tcp.streamGBps), and of 64 KiB in 64 pieces against 1:
 * the CPU overhead each end spends per message (tcp.overheadUs, at most half a hand-off), and on
 * their one-shot path (2-rank all-reduce of 8 B, tcp.oneShotUs).
 * Thread ranks are also measured on their one-shot path (2-rank broadcast of 8 B: its cost of
 * a call; 2-rank all-reduce of 32 KiB: the rate with which the simulator reproduces it, fitted
 * at the end), on a 2-rank direct
 * broadcast of 8 B (less recursive doubling: shm.releaseUs, the root seeing its message taken), and at twice the cores
 * (reduce-scatter by ring of 1 MiB and all-reduce by ring of 8 B, each in 2 x `runs` + 1 launches, the
 * fastest of the first's and the median of the second's) for the oversubscribed
 * hand-off, the larger of the values with which the simulator reproduces those rings; one core's copy of bytes another core has just
 * written for peerWrittenGBps, the extra time to overwrite bytes another core read for
 * invalidationTiers (both the mean of moments taken in bursts through the tune; the costliest
 * moment's tiers are worstInvalidationTiers), and the copy and fold speeds by working set for
 * memoryTiers (in the same bursts; one core alone, which gives shm.copyGBps at PROFILE_WORKING_SET, and each core
 * while all copy at once; one core's float32 sum kernel on the shared arena, which gives
 * reduceGBps at PROFILE_WORKING_SET).
 */
export async function calibrate(
  detection: LocalDetection,
  runs: number,
  log: (line: string) => void,
): Promise<LocalProfile> {
  /**
   * Medians over `launches` runs of each size from `bytes` up to `upToBytes` (x SIZE_STEP), out of
   * place. A single size under LARGE warms up SMALL_CALL_WARMUP calls; a range, sizes up to 256 KiB
   * that many (the first size warms the code up for those after it, whose time is their bytes).
   */
  const timeSizes = async (
    op: BenchOpName,
    ranks: number,
    bytes: number,
    procs: boolean,
    timing: Timing = {},
  ): Promise<{ bytes: number; us: number }[]> => {
    const { algorithm, pieceBytes, launches = runs, upToBytes = bytes, inPlace = false } = timing;
    const samples: { bytes: number; us: number }[][] = [];
    const warmupIters = timing.warmupIters ?? (bytes >= LARGE || upToBytes > bytes ? 2 : SMALL_CALL_WARMUP);
    const env = pieceBytes === undefined ? undefined : { ...process.env, TSCCL_CHUNK_BYTES: String(pieceBytes) };
    for (let r = 0; r < launches; r++) {
      const options: BenchOptions = {
        op,
        ranks,
        minBytes: bytes,
        maxBytes: upToBytes,
        stepFactor: SIZE_STEP,
        stepBytes: 1,
        iters: upToBytes >= LARGE ? LARGE_ITERS : SMALL_ITERS,
        warmupIters,
        warmupSmall: SMALL_CALL_WARMUP,
        check: false,
        dtype: 'float32',
        redop: 'sum',
        root: 0,
        timeoutMs: TIMEOUT_MS,
        procs,
        ...(algorithm === undefined ? {} : { algorithm }),
      };
      const rows = await runBench(options, env === undefined ? {} : { env });
      samples.push(rows.filter((row) => row.inPlace === inPlace).map((row) => ({ bytes: row.bytes, us: row.timeUs })));
    }
    return samples[0].map((first, size) => {
      const sizeSamples = samples.map((launch) => launch[size].us);
      const us = median(sizeSamples);
      const pieces = pieceBytes === undefined ? '' : ` in ${Math.ceil(first.bytes / pieceBytes)} pieces`;
      log(
        `  ${procs ? 'tcp' : 'shm'} ${op}${algorithm ? ` (${algorithm})` : ''} ${ranks} ranks ${first.bytes} B${pieces}${inPlace ? ' in place' : ''}: ${us.toFixed(1)} us (median of ${launches}: ${sizeSamples.map((x) => x.toFixed(1)).join(', ')})`,
      );
      return { bytes: first.bytes, us };
    });
  };
  const time = async (
    op: BenchOpName,
    ranks: number,
    bytes: number,
    procs: boolean,
    timing: Omit<Timing, 'upToBytes'> = {},
  ): Promise<number> => (await timeSizes(op, ranks, bytes, procs, timing))[0].us;
  // Recursive doubling and the ring of 8 B first, then the transport's other small calls.
  const timeSmall = async (procs: boolean, others: readonly SmallCall[]): Promise<number[]> => {
    const calls = [RECURSIVE_DOUBLING_8B, RING_8B, ...others];
    const launchOnce = () =>
      timeSmallCalls(calls, {
        procs,
        blocks: SMALL_BLOCKS_PER_LAUNCH,
        minCalls: SMALL_ITERS,
        warmupCalls: SMALL_CALL_WARMUP,
        timeoutMs: TIMEOUT_MS,
      });
    const times = await timeConsistently(() => fastestOfLaunches(launchOnce, runs), log);
    calls.forEach((c, i) => {
      log(
        `  ${procs ? 'tcp' : 'shm'} ${c.op} (${c.algorithm ?? 'tuner'}) 2 ranks ${c.bytes} B: ${times[i].toFixed(1)} us (median of ${SMALL_BLOCKS_PER_LAUNCH} blocks in turns, fastest of ${runs} launches)`,
      );
    });
    return times;
  };
  // Lines in the other core's cache cost what the state of the VM's vCPUs makes them, and what
  // the cores copy depends on it too: both sampled in bursts between the measurements, over the
  // whole tune (peer-cache.ts, copy-tiers.ts).
  const peerCache = new PeerCacheSampler();
  const copyTiers = new CopyTierSampler(detection.cores);
  const burst = async () => {
    await peerCache.burst();
    await copyTiers.burst();
  };
  log('shared memory (thread ranks):');
  const [shmOneStep, shmTwoSteps, oneShotUs, oneShotAllReduce, directBroadcast] = await timeSmall(false, [
    { op: 'broadcast', bytes: 8, algorithm: ONE_SHOT },
    { op: 'all_reduce', bytes: ONE_SHOT_BYTES, algorithm: ONE_SHOT },
    { op: 'broadcast', bytes: 8, algorithm: 'direct' },
  ]);
  const shm = handOffOf(shmOneStep, shmTwoSteps, log);
  // The root of a direct broadcast posts, then waits for its message to be taken, which
  // recursive doubling (each rank reads the other's input as the other reads its) never does.
  const releaseUs = Math.max(0, directBroadcast - shmOneStep);
  // A ring over 2 x cores ranks: most hand-offs go to a descheduled receiver. Fitted at the end,
  // through the simulator, once every other figure is known.
  const over = detection.cores * 2;
  await burst();
  const overRingUs = await time(HAND_OFF_RING.op, over, HAND_OFF_RING.bytes, false, {
    algorithm: 'ring',
    launches: oversubscribedRingLaunches(runs),
  });
  await burst();
  log('TCP (process ranks on this host):');
  // The one-shot path runs other code than the schedules (no executor): its own 2-rank call.
  const [tcpOneStep, tcpTwoSteps, tcpOneShotUs, sendrecvSmall] = await timeSmall(true, [
    { op: 'all_reduce', bytes: 8, algorithm: ONE_SHOT },
    { op: 'sendrecv', bytes: 8 },
  ]);
  const tcp = handOffOf(tcpOneStep, tcpTwoSteps, log);
  const sendrecvLarge = await time('sendrecv', 2, LARGE, true);
  const rateOf = (bytes: number, us: number) => bytes / Math.max(1e-3, us - sendrecvSmall) / 1e3;
  const gbps = rateOf(LARGE, sendrecvLarge);
  // Smaller messages move faster: they fit the socket buffers and the caches.
  const tierTimes = await timeSizes('sendrecv', 2, TCP_TIERS.fromBytes, true, { upToBytes: TCP_TIERS.upToBytes });
  const sizeTiers = tierTimes.map(({ bytes, us }) => ({ bytes, gbps: rateOf(bytes, us) }));
  log(
    `  tcp sendrecv rate by size, each way: ${sizeTiers.map((t) => `${t.bytes / 1024} KiB ${t.gbps.toFixed(2)}`).join(', ')}, ${LARGE / 1024} KiB ${gbps.toFixed(2)} GB/s`,
  );
  await burst();
  // One more message in a stream that nobody waits for costs each end its CPU overhead: the
  // root's sends of a broadcast's pieces queue in the socket, the receiver takes them as they come.
  const whole = await time('broadcast', 2, STREAM_BYTES, true, {
    algorithm: 'binomial_tree',
    pieceBytes: STREAM_BYTES,
  });
  const pieced = await time('broadcast', 2, STREAM_BYTES, true, {
    algorithm: 'binomial_tree',
    pieceBytes: STREAM_BYTES / STREAM_PIECES,
  });
  const perPieceUs = (pieced - whole) / (STREAM_PIECES - 1);
  const overheadUs = Math.max(0, Math.min(tcp.messageUs / 2, perPieceUs));
  if (perPieceUs > overheadUs) {
    // Both ends' overhead is part of one hand-off, so more than half of it is a stall in the stream.
    log(
      `  warning: a piece of the stream cost ${perPieceUs.toFixed(1)} us, over half a hand-off; the overhead is kept at ${overheadUs.toFixed(1)} us: run again, with more --runs`,
    );
  }
  // One process sends and the other only receives: faster than each way of a sendrecv. In
  // place, as out of place the root copies its own output after its send, on the same thread.
  const stream = await time('broadcast', 2, STREAM.bytes, true, {
    algorithm: 'direct',
    inPlace: true,
    warmupIters: STREAM.warmupIters,
  });
  const streamGBps = rateOf(STREAM.bytes, stream);
  await burst();
  const memoryTiers = copyTiers.tiers();
  const { peerWrittenGBps, invalidationTiers, worstInvalidationTiers, worstPeerWrittenGBps, bestInvalidationTiers } =
    summarizePeerCache(peerCache.moments);
  const tiersText = (tiers: typeof invalidationTiers) =>
    tiers.map((t) => `${t.bytes / 1024} KiB ${t.nsPerByte.toFixed(3)}`).join(', ');
  log(
    `copy of bytes another core just wrote: ${peerWrittenGBps.toFixed(2)} GB/s (${peerCache.moments.length} moments)`,
  );
  log(`overwriting bytes another core read, extra by what it touched since: ${tiersText(invalidationTiers)} ns/B`);
  log(
    `  in the costliest moment: ${tiersText(worstInvalidationTiers)} ns/B; copy of fresh bytes ${worstPeerWrittenGBps.toFixed(2)} GB/s`,
  );
  log(
    `copy by working set, one core alone / each core with all ${detection.cores} copying / one core folding: ${memoryTiers.map((t) => `${t.bytes / MIB} MiB ${t.copyGBps.toFixed(1)} / ${t.allCoresGBps.toFixed(1)} / ${t.foldGBps.toFixed(1)}`).join(', ')} GB/s`,
  );
  // The sum kernel's speed where the profile's rates stand, as copyGBps is read off the tiers.
  const reduceGBps = foldAtProfileWorkingSet(memoryTiers)!;
  log(`float32 sum kernel at ${PROFILE_WORKING_SET / MIB} MiB: ${reduceGBps.toFixed(2)} GB/s`);
  // A thread rank copies its messages itself, so its rate is one core's copy, read from the
  // tiers at the working set the profile's rates stand for; ranks that copy at once share what
  // the cores move together (allCoresGBps: past the caches they share the memory bus).
  const copyGBps = copyAtProfileWorkingSet(memoryTiers);
  const profile: LocalProfile = {
    version: 1,
    host: detection.host,
    measuredAt: new Date().toISOString(),
    cores: detection.cores,
    shm: {
      callUs: shm.callUs,
      messageUs: shm.messageUs,
      copyGBps,
      oversubscribedMessageUs: shm.messageUs,
      oneShotUs,
      releaseUs,
      peerWrittenGBps,
      invalidationTiers,
      worstInvalidationTiers,
      worstPeerWrittenGBps,
    },
    tcp: {
      callUs: tcp.callUs,
      messageUs: tcp.messageUs,
      gbps,
      streamGBps,
      overheadUs,
      oneShotUs: tcpOneShotUs,
      sizeTiers,
    },
    reduceGBps,
    memoryTiers,
    runs,
  };
  // The one-shot call pays the cache state it met; fitted in the average state first. One faster
  // than that allows met a cheaper state (it is its fastest launch): fitted in the cheapest moment.
  const oneShotCall = {
    collective: 'allReduce',
    ranks: 2,
    bytes: ONE_SHOT_BYTES,
    algorithm: ONE_SHOT,
    calls: 1 + SMALL_ITERS,
    timeUs: oneShotAllReduce,
  } as const;
  const inAverageState = fitOneShotRate(profile, detection, oneShotCall);
  const oneShot = inAverageState.belowModel
    ? fitOneShotRate(
        { ...profile, shm: { ...profile.shm, invalidationTiers: bestInvalidationTiers } },
        detection,
        oneShotCall,
      )
    : inAverageState;
  if (inAverageState.belowModel && !oneShot.belowModel)
    log(
      `  the 2-rank one-shot all-reduce of ${ONE_SHOT_BYTES} B ran faster than the average cache state allows: fitted in the cheapest moment`,
    );
  log(
    oneShot.belowModel
      ? `  warning: the 2-rank one-shot all-reduce of ${ONE_SHOT_BYTES} B ran faster than the model allows at any rate; its copies are charged at the copy speed`
      : `one-shot rate (the 2-rank all-reduce of ${ONE_SHOT_BYTES} B as the simulator reproduces it): ${oneShot.gbps.toFixed(2)} GB/s`,
  );
  const fitted: LocalProfile = { ...profile, shm: { ...profile.shm, oneShotGBps: oneShot.gbps } };
  const handOff = fitOversubscribedHandOff(fitted, detection, {
    collective: HAND_OFF_RING.collective,
    ranks: over,
    bytes: HAND_OFF_RING.bytes,
    algorithm: 'ring',
    calls: 1 + SMALL_ITERS,
    timeUs: overRingUs,
  });
  if (handOff.belowModel)
    log(
      `  warning: the ${over}-rank ring of ${HAND_OFF_RING.bytes} B ran faster than the model allows with no hand-off; the oversubscribed hand-off is kept at the 2-rank one`,
    );
  const oversubscribedMessageUs = Math.max(shm.messageUs, handOff.handOffUs);
  const coreSwitch = measureCoreSwitchUs();
  log(
    'us' in coreSwitch
      ? `oversubscribed hand-off (${over} thread ranks on ${detection.cores} cores): ${oversubscribedMessageUs.toFixed(1)} us; a switch between two threads on one core ${coreSwitch.us.toFixed(2)} us`
      : `oversubscribed hand-off (${over} thread ranks on ${detection.cores} cores): ${oversubscribedMessageUs.toFixed(1)} us; no switch between threads on one core measured (needs ${coreSwitch.missing}), so all of it is charged on a core`,
  );
  return {
    ...fitted,
    shm: {
      ...fitted.shm,
      oversubscribedMessageUs,
      ...('us' in coreSwitch ? { oversubscribedSwitchUs: coreSwitch.us } : {}),
    },
  };
}

/**
 * Small-call timings whose first two, the 2-rank recursive doubling and ring of 8 B, agree: the
 * ring does all recursive doubling does and one hand-off more, which costs at most a call, so
 * outside those bounds a stall fell on one of them and all are timed again, each call keeping
 * its fastest (a stall only adds).
 */
export async function timeConsistently(
  timeAll: () => Promise<number[]>,
  log: (line: string) => void,
): Promise<number[]> {
  let times = await timeAll();
  const contradict = () => times[1] < times[0] || times[1] > 2 * times[0];
  for (let retry = 0; retry < HAND_OFF_RETRIES && contradict(); retry++) {
    log(
      `  the ring read ${times[1] < times[0] ? 'faster than recursive doubling' : 'over twice recursive doubling'}: timing the small calls again`,
    );
    times = fastestEach(times, await timeAll());
  }
  return times;
}

/**
 * Each small call's time in the fastest of `launches` launches. A launch of thread ranks meets
 * the VM in one of a few states that last about as long as a launch, and a profile taken in the
 * slowest misleads the tuner most; the fastest of a few launches rarely lands there (docs/tuning.md).
 */
export async function fastestOfLaunches(launchOnce: () => Promise<number[]>, launches: number): Promise<number[]> {
  let times = await launchOnce();
  for (let launch = 1; launch < launches; launch++) times = fastestEach(times, await launchOnce());
  return times;
}

/** Each call's faster time of two timings (a stall, or a slow state of the VM, only adds). */
function fastestEach(times: readonly number[], again: readonly number[]): number[] {
  return times.map((t, i) => Math.min(t, again[i]));
}

/**
 * The fixed cost of a call and the cost of one hand-off, from 2-rank all-reduces of 8 B. Both run
 * the same call path; recursive doubling is one message and the ring two, so their difference is
 * one hand-off and the rest the fixed cost of a call.
 */
export function handOffOf(
  oneStep: number,
  twoSteps: number,
  log: (line: string) => void,
): { callUs: number; messageUs: number } {
  const messageUs = Math.max(0, twoSteps - oneStep);
  const callUs = Math.max(0, oneStep - messageUs);
  if (oneStep < messageUs) {
    // Two hand-offs took more than twice one: a stall, not the machine's costs.
    log(
      `  warning: the ring took over twice recursive doubling, so the call cost reads as 0 us; the machine was busy: run again, with more --runs`,
    );
  } else if (twoSteps < oneStep) {
    log(
      `  warning: the ring still read faster than recursive doubling, so the hand-off reads as 0 us; the machine was busy: run again, with more --runs`,
    );
  }
  return { callUs, messageUs };
}
