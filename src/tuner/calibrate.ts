import { runBench } from '../bench/run-bench.js';
import type { BenchOpName } from '../bench/bench-ops.js';
import type { BenchOptions } from '../bench/bench-options.js';
import { arenaKernels } from '../kernels/simd-kernels.js';
import { Arena } from '../memory/arena.js';
import type { LocalProfile } from '../topology/local-profile.js';
import type { LocalDetection } from '../topology/local-topology.js';

const median = (xs: readonly number[]) => [...xs].sort((a, b) => a - b)[xs.length >> 1];
const LARGE = 16 * 1024 * 1024;

/**
 * Measures this machine for the profile (`tsccl tune`). For each transport, over `runs` repeated
 * launches (medians):
 * - all-reduce of 8 B on 2 ranks by recursive doubling = callUs + messageUs (one exchange), and
 *   by ring = callUs + 2 x messageUs (two steps);
 * - sendrecv of 16 MiB minus sendrecv of 8 B: the copy, giving GB/s.
 * Thread ranks are also measured at twice the cores (ring, 8 B) for the oversubscribed
 * hand-off, and the float32 sum kernel on the shared arena for reduceGBps.
 */
export async function calibrate(detection: LocalDetection, runs: number, log: (line: string) => void): Promise<LocalProfile> {
  const time = async (op: BenchOpName, ranks: number, bytes: number, procs: boolean, algorithm?: string): Promise<number> => {
    const samples: number[] = [];
    for (let r = 0; r < runs; r++) {
      const options: BenchOptions = {
        op, ranks, minBytes: bytes, maxBytes: bytes, stepFactor: 2, stepBytes: 1, iters: bytes >= LARGE ? 10 : 200, warmupIters: bytes >= LARGE ? 2 : 20,
        check: false, dtype: 'float32', redop: 'sum', root: 0, timeoutMs: 120_000, procs, ...(algorithm === undefined ? {} : { algorithm }),
      };
      const rows = await runBench(options);
      samples.push(rows.find((row) => !row.inPlace)!.timeUs);
    }
    const value = median(samples);
    log(`  ${procs ? 'tcp' : 'shm'} ${op}${algorithm ? ` (${algorithm})` : ''} ${ranks} ranks ${bytes} B: ${value.toFixed(1)} us (median of ${runs})`);
    return value;
  };
  // Both all-reduces run the same call path; at 2 ranks recursive doubling is one message and
  // the ring two, so their difference is one hand-off and the rest the fixed cost of a call.
  const transport = async (procs: boolean) => {
    const oneStep = await time('all_reduce', 2, 8, procs, 'recursive_doubling');
    const twoSteps = await time('all_reduce', 2, 8, procs, 'ring');
    const messageUs = Math.max(0, twoSteps - oneStep);
    const callUs = Math.max(0, oneStep - messageUs);
    const small = await time('sendrecv', 2, 8, procs);
    const large = await time('sendrecv', 2, LARGE, procs);
    const gbps = LARGE / Math.max(1e-3, large - small) / 1e3;
    return { callUs, messageUs, gbps };
  };
  log('shared memory (thread ranks):');
  const shm = await transport(false);
  // A ring over 2 x cores ranks: 2(n-1) hand-offs, most of them to a descheduled receiver.
  const over = detection.cores * 2;
  const overRing = await time('all_reduce', over, 8, false, 'ring');
  const oversubscribedMessageUs = Math.max(shm.messageUs, (overRing - shm.callUs) / (2 * (over - 1)));
  log('TCP (process ranks on this host):');
  const tcp = await transport(true);
  const reduceGBps = measureReduce();
  log(`float32 sum kernel: ${reduceGBps.toFixed(2)} GB/s`);
  return {
    version: 1, host: detection.host, measuredAt: new Date().toISOString(), cores: detection.cores,
    shm: { callUs: shm.callUs, messageUs: shm.messageUs, copyGBps: shm.gbps, oversubscribedMessageUs },
    tcp: { callUs: tcp.callUs, messageUs: tcp.messageUs, gbps: tcp.gbps },
    reduceGBps, runs,
  };
}

/** The float32 sum kernel the executor uses, on 4 Mi elements of the shared arena; GB/s of output, median of 9. */
function measureReduce(): number {
  const arena = Arena.create();
  const n = 4 * 1024 * 1024;
  const view = () => arena.view(Float32Array, arena.allocate(n * 4), n, 4) as Float32Array;
  const [d, a, b] = [view(), view(), view()];
  const kernel = arenaKernels(arena).reduce('float32', 'sum');
  const times: number[] = [];
  for (let i = 0; i < 9; i++) {
    const t = performance.now();
    kernel(d, a, b);
    times.push(performance.now() - t);
  }
  return (n * 4) / (median(times) * 1e6);
}
