import { Worker } from 'node:worker_threads';
import { ErrorCode, TscclError } from '../errors.js';
import type { LocalProfile } from '../topology/local-profile.js';
import { median } from './median.js';
import { rateOfMeanTime } from './moments.js';

/**
 * Pieces of the sizes a pulled message has while it still sits in a 2 MiB L2, and on to where
 * what a core read has left the caches (64 MiB: the simulator holds the last tier for every larger
 * call). The copy rate changes with the size (memmove changes its method), so peerWrittenGBps is
 * the median over the sizes up to 1 MiB (docs/tuning.md).
 */
const SIZES = [32, 64, 128, 256, 512, 1024, 2048, 4096, 8192, 16384, 32768, 65536].map((kib) => kib * 1024);
const PEER_WRITTEN_SIZES = SIZES.filter((size) => size <= 1024 * 1024);
/** Rounds per size (the reader copies in every other one): 200 up to 256 KiB, fewer for larger pieces, so each size moves about as much. */
const roundsFor = (size: number): number => Math.max(20, Math.min(200, Math.round((200 * 256 * 1024) / size)));
/**
 * The cost of lines in the other core's cache changes as the VM moves its vCPUs, in spells that
 * come more often during and right after thread ranks' calls; moments taken with nothing else
 * running miss them. So tune takes its moments in bursts between its other measurements, which
 * run thread and process ranks, MOMENTS_PER_BURST at a time (docs/tuning.md).
 */
const MOMENTS_PER_BURST = 4;
/** A round takes microseconds; a writer silent this long has died, and tune must not hang. */
const WRITER_TIMEOUT_MS = 10_000;
/** Flags after the data: the round the reader asks for, the round the writer finished, the size, the write's ns. */
const ASKED = 0;
const WRITTEN = 1;
const SIZE = 2;
const WRITE_NS = 3;

/**
 * The writer: each round, overwrite the asked bytes from a private buffer (so they sit modified
 * in this core's cache), time that, and say so. It runs in a worker so that it gets the other core.
 */
const WRITER = `
const { workerData } = require('node:worker_threads');
const data = new Uint8Array(workerData.memory, 0, workerData.bytes);
const flags = new Int32Array(workerData.memory, workerData.bytes, 4);
const sources = [new Uint8Array(workerData.bytes).fill(1), new Uint8Array(workerData.bytes).fill(2)];
for (let round = 1; ; round++) {
  while (Atomics.load(flags, ${ASKED}) !== round) if (Atomics.load(flags, ${ASKED}) < 0) process.exit(0);
  const start = performance.now();
  data.set(sources[round & 1].subarray(0, flags[${SIZE}]));
  flags[${WRITE_NS}] = Math.round((performance.now() - start) * 1e6);
  Atomics.store(flags, ${WRITTEN}, round);
}`;

/** What one moment measured: see measurePeerCacheMoments. */
export type PeerCacheMoment = Required<Pick<LocalProfile['shm'], 'peerWrittenGBps' | 'invalidationTiers'>>;
/** The moments' summary: the profile's figures, and the cheapest moment's tiers, which tune's fits may need. */
export type PeerCache = PeerCacheMoment &
  Required<Pick<LocalProfile['shm'], 'worstInvalidationTiers' | 'worstPeerWrittenGBps'>> & {
    readonly bestInvalidationTiers: PeerCacheMoment['invalidationTiers'];
  };

/** Moments of the peer cache taken in bursts (MOMENTS_PER_BURST back to back), kept for summarizePeerCache. */
export class PeerCacheSampler {
  readonly moments: PeerCacheMoment[] = [];

  async burst(moments = MOMENTS_PER_BURST): Promise<void> {
    this.moments.push(...(await measurePeerCacheMoments(moments)));
  }
}

/**
 * What lines in the other core's cache cost over the moments: on average (the mean extra ns per
 * byte of each tier, and the copy rate of the mean time per byte), which the simulator predicts
 * with; in the costliest moment (the largest sum over its tiers; its copy rate too), which the tuner weighs
 * against the average (select.ts); and in the cheapest, for a timed call that ran faster than
 * the average state allows (calibrate.ts).
 */
export function summarizePeerCache(moments: readonly PeerCacheMoment[]): PeerCache {
  if (moments.length === 0) throw new TscclError(ErrorCode.INTERNAL, 'tune: no moment of the peer cache was measured');
  const cost = (m: PeerCacheMoment) => m.invalidationTiers.reduce((sum, tier) => sum + tier.nsPerByte, 0);
  const worst = moments.reduce((a, b) => (cost(b) > cost(a) ? b : a));
  const best = moments.reduce((a, b) => (cost(b) < cost(a) ? b : a));
  return {
    peerWrittenGBps: rateOfMeanTime(moments.map((m) => m.peerWrittenGBps)),
    invalidationTiers: moments[0].invalidationTiers.map((tier, i) => ({
      bytes: tier.bytes,
      nsPerByte: moments.reduce((sum, m) => sum + m.invalidationTiers[i].nsPerByte, 0) / moments.length,
    })),
    worstInvalidationTiers: worst.invalidationTiers,
    worstPeerWrittenGBps: worst.peerWrittenGBps,
    bestInvalidationTiers: best.invalidationTiers,
  };
}

/**
 * What lines in the other core's cache cost at `count` moments back to back, both ways, from one
 * writer thread and this one reading in every other round:
 * - peerWrittenGBps: how fast this core copies bytes the other has just written (each line comes
 *   from the writer's cache): what a thread rank pays to pull a piece its peer reduced or
 *   received in the same call. The simulator's freshReadGBps.
 * - invalidationTiers: how much longer the writer takes to overwrite a piece after this core
 *   copied it than after it did not (this cache holds the lines, and the writer takes each back
 *   first), in ns per byte, by what this core touched in between (the piece and its copy).
 */
export async function measurePeerCacheMoments(count: number): Promise<PeerCacheMoment[]> {
  const bytes = SIZES[SIZES.length - 1];
  const memory = new SharedArrayBuffer(bytes + 16);
  const data = new Uint8Array(memory, 0, bytes);
  const flags = new Int32Array(memory, bytes, 4);
  // Into shared memory, as a thread rank copies into its arena.
  const target = new Uint8Array(new SharedArrayBuffer(bytes)).fill(1);
  // One writer and one set of buffers for the moments taken back to back: 4 x 64 MiB to allocate and fill.
  const writer = new Worker(WRITER, { eval: true, workerData: { memory, bytes } });
  await new Promise<void>((resolve, reject) => {
    writer.once('online', resolve);
    writer.once('error', reject);
  });
  let round = 0;
  /** One moment: every size's rounds, the writer writing and this thread copying in every other one. */
  const moment = (): PeerCacheMoment => {
    const copyRates: number[] = [];
    const invalidationTiers: { bytes: number; nsPerByte: number }[] = [];
    for (const size of SIZES) {
      // A write's time, by whether this core copied the piece in the round before it.
      const afterCopy: number[] = [];
      const afterNone: number[] = [];
      for (let r = 0; r < roundsFor(size); r++) {
        const copied = r % 2 === 1;
        flags[SIZE] = size;
        Atomics.store(flags, ASKED, ++round);
        const giveUpAt = performance.now() + WRITER_TIMEOUT_MS;
        while (Atomics.load(flags, WRITTEN) !== round) {
          if (performance.now() > giveUpAt)
            throw new TscclError(
              ErrorCode.TIMEOUT,
              `tune: the writer thread did not fill ${size} bytes within ${WRITER_TIMEOUT_MS} ms`,
            );
        }
        // Round 0 of a size follows the last round of the size before, which copied other bytes.
        if (r > 0) (copied ? afterNone : afterCopy).push(flags[WRITE_NS]);
        if (!copied) continue;
        const start = performance.now();
        target.set(data.subarray(0, size));
        if (PEER_WRITTEN_SIZES.includes(size)) copyRates.push(size / ((performance.now() - start) * 1e6));
      }
      invalidationTiers.push({
        bytes: 2 * size,
        nsPerByte: Math.max(0, (median(afterCopy) - median(afterNone)) / size),
      });
    }
    return { peerWrittenGBps: median(copyRates), invalidationTiers };
  };
  try {
    return Array.from({ length: count }, moment);
  } finally {
    Atomics.store(flags, ASKED, -1);
    await writer.terminate();
  }
}
