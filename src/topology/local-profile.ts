import { mkdirSync, readFileSync, renameSync, writeFileSync, existsSync } from 'node:fs';
import { homedir } from 'node:os';
import { dirname, join } from 'node:path';
import { z } from 'zod';
import { paramString } from '../config/params.js';
import { invalidArgument } from '../errors.js';
import { cacheScale } from './cache-tiers.js';
import { type InvalidationTiers, invalidationTiersSchema } from './topology-schema.js';

/**
 * What `tsccl tune` measures on a machine, and what `--topo local` and the tuner read. All times
 * are medians: of repeated runs, and for the small 2-rank calls of blocks in which they take
 * turns within one launch, the fastest of several launches. The file is JSON:
 *
 *   { "version": 1, "host": "name", "measuredAt": "ISO time" | null, "cores": 2,
 *     "shm": { "callUs": .., "messageUs": .., "copyGBps": .., "oversubscribedMessageUs": .., "oversubscribedSwitchUs": ..,
 *              "oneShotUs": .., "oneShotGBps": .., "releaseUs": .., "peerWrittenGBps": ..,
 *              "invalidationTiers": [ { "bytes": .., "nsPerByte": .. }, .. ],
 *              "worstInvalidationTiers": [ .. ], "worstPeerWrittenGBps": .. },                  thread ranks, shared memory
 *     "tcp": { "callUs": .., "messageUs": .., "gbps": .., "streamGBps": .., "overheadUs": .., "oneShotUs": ..,
 *              "sizeTiers": [ { "bytes": .., "gbps": .. }, .. ] },
 *                                                                process ranks, TCP on this host
 *     "reduceGBps": ..,                                          float32 sum kernel, output bytes
 *     "memoryTiers": [ { "bytes": .., "copyGBps": .., "allCoresGBps": .., "foldGBps": .. }, .. ],   copy and fold speed by working set
 *     "runs": 3 }
 *
 * callUs is the fixed cost of a collective call; messageUs the cost of one message hand-off
 * between two ranks; shm.copyGBps one core's copy (a thread rank copies its messages itself),
 * tcp.gbps the per-pair bandwidth of a large message each way;
 * tcp.streamGBps is one process sending a large message to another that sends nothing, in place
 * (out of place the root also copies its own output), and so the pace at which a sender's thread
 * copies a message into its socket (optional: the default below stands in): faster than gbps,
 * where both send and receive at once. Profiles before 2026-11-24 timed 16 MiB out of place,
 * the root's copy included (2.6-3.2 GB/s on the 2-core VMs, where 64 MiB in place gives 5.4-5.9).
 * oversubscribedMessageUs the hand-off when there are more thread ranks than cores, where a
 * receiver is often descheduled and must be woken (`tsccl tune` fits it: the value with which
 * the simulator reproduces a ring of 8 B on twice as many ranks as cores);
 * shm.oversubscribedSwitchUs the part of it that takes a core per other rank on that core (one,
 * with twice as many ranks as cores), the rest being latency that other ranks' work hides
 * (`tsccl tune` measures it: two threads pinned to one core handing a flag back and forth;
 * optional: without it the whole hand-off takes a core). Profiles written before 2026-11-24 also
 * carry tcp.oversubscribedGBps (4 processes shifting 16 MiB around a ring), which nothing reads
 * any more: processes that outnumber the cores move what the cores do (local-topology.ts).
 * tcp.sizeTiers is the rate each way of a 2-process sendrecv of `bytes` below the 16 MiB of gbps:
 * loopback TCP moves a message that fits the socket buffers and the caches at 2-3x the rate of a
 * large one (optional: without it, gbps at every size).
 * tcp.overheadUs is the CPU time each end spends on one message, which a stream of messages pays
 * even when nobody waits: one more message in a back-to-back stream between two processes
 * (optional: the default below stands in).
 * oneShotUs and oneShotGBps are the low-latency one-shot path of thread ranks (exec/one-shot.ts):
 * a 2-rank 8 B broadcast through it, and the rate with which the simulator reproduces a 2-rank
 * all-reduce of 32 KiB through it (both ranks publish by reference and read at once;
 * tuner/fit-one-shot.ts); optional, the defaults below stand in. tcp.oneShotUs is the one-shot
 * path of process ranks: a 2-rank 8 B all-reduce through it (optional, the default stands in).
 * shm.releaseUs is what a rank that posted its last message spends until it sees the message
 * taken, spinning on a flag: a 2-rank direct broadcast of 8 B less recursive doubling's call and
 * hand-off (optional: the default below stands in).
 * peerWrittenGBps is how fast one core copies bytes another core has just written (their cache
 * lines come from the writer's cache): what pulling a piece its sender reduced or received in
 * the same call costs (optional: the default below stands in).
 * invalidationTiers is what one core spends, on top of the write, overwriting bytes another core
 * has read since (ns per byte): the reader's cache holds those lines, and the writer must take
 * each back first. It is measured with the reader touching `bytes` (the piece it read and the
 * copy it wrote) between the writes, and shrinks as that grows, because less of what it read
 * stays in its cache (optional: the defaults below stand in). It is the mean over moments taken
 * through the tune, as this cost changes with where a VM's vCPUs sit; worstInvalidationTiers is
 * the costliest moment's, which the tuner weighs against the mean (optional: absent, the mean alone),
 * and worstPeerWrittenGBps that moment's peerWrittenGBps (optional: absent, the mean's).
 * memoryTiers is how fast one core copies when source and destination together span `bytes`
 * (caches): copyGBps and reduceGBps were measured at PROFILE_WORKING_SET, and other working sets
 * scale them by the tiers (optional: profiles written before it have one speed); a tier's
 * allCoresGBps is each core's copy speed while every core copies its share of those bytes at
 * once, which is what the cores move together past the caches, where they share the memory bus
 * (optional: without it, cores x copyGBps); its foldGBps is one core's float32 sum kernel folding
 * two arrays into a third, the three spanning `bytes` (bytes written), which scales reduceGBps
 * (read off these tiers at PROFILE_WORKING_SET) and says how much a fold loads the memory paths
 * against a copy (optional: without it, reductions scale as copies and load them 1.5x).
 */
const transportSchema = z.object({ callUs: z.number().min(0), messageUs: z.number().min(0) });
export const profileSchema = z
  .object({
    version: z.literal(1),
    host: z.string(),
    measuredAt: z.string().nullable(),
    cores: z.number().int().min(1),
    shm: transportSchema.extend({
      copyGBps: z.number().positive(),
      oversubscribedMessageUs: z.number().min(0),
      oneShotUs: z.number().min(0).optional(),
      oneShotGBps: z.number().positive().optional(),
      peerWrittenGBps: z.number().positive().optional(),
      releaseUs: z.number().min(0).optional(),
      invalidationTiers: invalidationTiersSchema.optional(),
      worstInvalidationTiers: invalidationTiersSchema.optional(),
      worstPeerWrittenGBps: z.number().positive().optional(),
      oversubscribedSwitchUs: z.number().min(0).optional(),
    }),
    tcp: transportSchema.extend({
      gbps: z.number().positive(),
      streamGBps: z.number().positive().optional(),
      // Written by `tsccl tune` before 2026-11-24 and read by nothing since: accepted so that those profiles still load.
      oversubscribedGBps: z.number().positive().optional(),
      overheadUs: z.number().min(0).optional(),
      oneShotUs: z.number().min(0).optional(),
      sizeTiers: z
        .array(z.object({ bytes: z.number().positive(), gbps: z.number().positive() }).strict())
        .min(1)
        .optional(),
    }),
    reduceGBps: z.number().positive(),
    memoryTiers: z
      .array(
        z
          .object({
            bytes: z.number().positive(),
            copyGBps: z.number().positive(),
            allCoresGBps: z.number().positive().optional(),
            foldGBps: z.number().positive().optional(),
          })
          .strict(),
      )
      .min(1)
      .optional(),
    runs: z.number().int().min(0),
  })
  .strict();

export type LocalProfile = z.infer<typeof profileSchema>;

/**
 * The working set at which the profile's copyGBps and reduceGBps stand: `tsccl tune` reads
 * both off its memory tiers here, on inputs that were written (never-written inputs read the
 * shared zero page and fold far faster than real data).
 */
export const PROFILE_WORKING_SET = 64 * 1024 * 1024;

/** One core's copy speed at PROFILE_WORKING_SET, read off the memory tiers: what shm.copyGBps stands for. */
export function copyAtProfileWorkingSet(tiers: NonNullable<LocalProfile['memoryTiers']>): number {
  return cacheScale(
    tiers.map((t) => ({ bytes: t.bytes, scale: t.copyGBps })),
    PROFILE_WORKING_SET,
  );
}

/** One core's fold speed at PROFILE_WORKING_SET, where every tier has one: what reduceGBps stands for. */
export function foldAtProfileWorkingSet(tiers: NonNullable<LocalProfile['memoryTiers']>): number | undefined {
  if (!tiers.every((t) => t.foldGBps !== undefined)) return undefined;
  return cacheScale(
    tiers.map((t) => ({ bytes: t.bytes, scale: t.foldGBps! })),
    PROFILE_WORKING_SET,
  );
}

export const MIB = 1024 * 1024;

/** The 2-process sendrecv, each way, whose rate is tcp.gbps: large enough that its fixed costs vanish. */
export const TCP_RATE_BYTES = 16 * MIB;

/**
 * The one-shot path where a profile predates its measurement: what two tunes on the 2-core VMs
 * measured and fitted (docs/SIMULATOR.md, "What `tsccl tune` measures").
 */
export const DEFAULT_ONE_SHOT = { oneShotUs: 1.5, oneShotGBps: 14 } as const;

/**
 * One core copying what another has just written, where a profile predates its measurement:
 * 7.9-9.9 GB/s in three runs of the tune measurement (tuner/peer-written.ts) on the 2-core VMs
 * (2026-11-21), against 20-27 GB/s for the same copy of bytes the copier wrote itself.
 */
export const DEFAULT_PEER_WRITTEN_GBPS = 9;

/**
 * A thread rank seeing its last message taken, where a profile predates its measurement: on the
 * 2-core VMs a 2-rank direct broadcast of 64 B-4 KiB took 4-5 us in four regret grids
 * (bench/regret.mjs, 2026-11-22), no longer than recursive doubling's 5-6, which waits for no
 * release: the root spinning on the flag sees it as the receiver sets it.
 */
export const DEFAULT_RELEASE_US = 0;

/**
 * Overwriting what another core read, where a profile predates its measurement: the extra ns
 * per byte of the tune measurement (tuner/peer-cache.ts, the mean of 16 moments a second apart)
 * on the 2-core VMs, three runs (2026-11-22): 0.14-0.34 while the reader touched up to 1 MiB
 * between the writes, 0.12-0.32 at 2 MiB, 0.08-0.27 at 4 MiB, 0.05-0.16 at 16 MiB and
 * 0.01-0.06 at 64 MiB, as what it read leaves its caches. At one moment it is 0, 0.09 or 0.5 at
 * 512 KiB, by where the VM has put the two vCPUs (0.5 when they are far apart: a piece
 * overwritten after the other core copied it then takes 5x as long as one it had not).
 */
export const DEFAULT_INVALIDATION_TIERS: Readonly<InvalidationTiers> = [
  { bytes: 1 * MIB, nsPerByte: 0.2 },
  { bytes: 2 * MIB, nsPerByte: 0.18 },
  { bytes: 4 * MIB, nsPerByte: 0.14 },
  { bytes: 8 * MIB, nsPerByte: 0.11 },
  { bytes: 16 * MIB, nsPerByte: 0.08 },
  { bytes: 32 * MIB, nsPerByte: 0.046 },
  { bytes: 64 * MIB, nsPerByte: 0.033 },
];

/**
 * A TCP message's CPU time at each end where a profile predates its measurement: 2 processes
 * broadcasting 64 KiB in 64 pieces against 1 on the 2-core VMs (2026-11-21, warmed up by 500
 * calls): 12-15 us more per piece, in two runs.
 */
export const DEFAULT_TCP_OVERHEAD_US = 13;

/**
 * A 2-process 8 B all-reduce through the TCP one-shot path where a profile predates its
 * measurement: 12-16 us in the regret grids of the 2-core VMs (bench/regret.mjs --procs,
 * 2026-11-21, 8 B to 512 B), 10.6-12.1 us in the prediction sweep's medians the same hour.
 */
export const DEFAULT_TCP_ONE_SHOT_US = 13;

/**
 * One process streaming to another where a profile predates its measurement: a 2-process
 * broadcast of 64 MiB in place took 11.4-12.3 ms on the 2-core VMs (2026-11-24, three runs,
 * 5.4-5.9 GB/s), where a sendrecv moved 2.1 GB/s each way; kept below that, as the default
 * gbps is below 2.1.
 */
export const DEFAULT_TCP_STREAM_GBPS = 4;

/** The profile's lone-stream rate over loopback, GB/s, or the default where it predates that measurement. */
export function tcpStreamGBps(profile: LocalProfile): number {
  return profile.tcp.streamGBps ?? DEFAULT_TCP_STREAM_GBPS;
}

/**
 * Used when no profile has been measured: figures of the 2-core VMs tsccl is developed on
 * (2026-11-21): thread ranks 2 x 64 B all-reduce 9 us by recursive doubling and 11 us by ring
 * (bench/regret.mjs), 4-rank ring 8 B 48 us, a 5 us hand-off (`tsccl tune`, 2026-11-22, crowded
 * ranks yielding their core), 16 MiB sendrecv 1.3-1.5
 * ms (two `tsccl tune` runs), TCP 16 MiB sendrecv 9.4-10.2 ms (three `tsccl tune` runs, receives reading
 * straight into their destination) and 4 processes shifting 16 MiB around a ring
 * 29.1-29.8 ms (2.25-2.30 GB/s all together), the SIMD float32 sum 19-20 GB/s; the one-shot path
 * as DEFAULT_ONE_SHOT says.
 */
export function defaultProfile(cores: number, host: string): LocalProfile {
  return {
    version: 1,
    host,
    measuredAt: null,
    cores,
    shm: {
      callUs: 7,
      messageUs: 2,
      copyGBps: 12,
      oversubscribedMessageUs: 5,
      ...DEFAULT_ONE_SHOT,
      releaseUs: DEFAULT_RELEASE_US,
      peerWrittenGBps: DEFAULT_PEER_WRITTEN_GBPS,
      invalidationTiers: [...DEFAULT_INVALIDATION_TIERS],
    },
    tcp: {
      callUs: 40,
      messageUs: 45,
      gbps: 1.7,
      streamGBps: DEFAULT_TCP_STREAM_GBPS,
      overheadUs: DEFAULT_TCP_OVERHEAD_US,
      oneShotUs: DEFAULT_TCP_ONE_SHOT_US,
      // 2-process sendrecv each way, net of the 8 B call, median of one `tsccl tune` and two
      // `tsccl bench -o sendrecv --procs` runs (2026-11-22): 2.4-3.1, 2.5-4.3, 2.2-3.0, 1.5-2.0 GB/s.
      sizeTiers: [
        { bytes: 128 * 1024, gbps: 2.9 },
        { bytes: 512 * 1024, gbps: 4.2 },
        { bytes: 2 * MIB, gbps: 2.45 },
        { bytes: 8 * MIB, gbps: 1.9 },
      ],
    },
    reduceGBps: 19,
    runs: 0,
    // One core copying (TypedArray.set in a SharedArrayBuffer, median of 5) on those VMs: the
    // per-core 2 MiB L2, then an L3 share of 64-96 MiB, then memory.
    memoryTiers: [
      { bytes: 1 * MIB, copyGBps: 37 },
      { bytes: 2 * MIB, copyGBps: 26 },
      { bytes: 8 * MIB, copyGBps: 14.5 },
      { bytes: 64 * MIB, copyGBps: 14 },
      { bytes: 128 * MIB, copyGBps: 8.2 },
      { bytes: 256 * MIB, copyGBps: 6.6 },
    ],
  };
}

export function profilePath(): string {
  return paramString('TSCCL_PROFILE') || join(homedir(), '.cache', 'tsccl', 'profile.json');
}

/** The saved profile, or the defaults when none exists; a malformed file is an error, not a silent default. */
export function loadProfile(
  cores: number,
  host: string,
  path = profilePath(),
): { profile: LocalProfile; source: string } {
  if (!existsSync(path))
    return { profile: defaultProfile(cores, host), source: 'defaults (run `tsccl tune` to measure this machine)' };
  let doc: unknown;
  try {
    doc = JSON.parse(readFileSync(path, 'utf8'));
  } catch (err) {
    throw invalidArgument(`Profile ${path} is not JSON: ${(err as Error).message}`, { argument: 'TSCCL_PROFILE' });
  }
  const parsed = profileSchema.safeParse(doc);
  if (!parsed.success) {
    throw invalidArgument(
      `Profile ${path} is not valid: ${parsed.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`).join('; ')}`,
      { argument: 'TSCCL_PROFILE' },
    );
  }
  return { profile: parsed.data, source: path };
}

export function saveProfile(profile: LocalProfile, path = profilePath()): void {
  mkdirSync(dirname(path), { recursive: true });
  const temporary = `${path}.${process.pid}.tmp`;
  writeFileSync(temporary, `${JSON.stringify(profile, null, 2)}\n`);
  renameSync(temporary, path);
}
