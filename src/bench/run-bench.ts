import { dtypeInfo } from '../dtypes/dtype.js';
import { launch } from '../launch/launch.js';
import { BENCH_OPS, sweepSizes } from '../algorithms/bench-ops.js';
import type { BenchOptions, BenchRow, RankMeasurement } from './bench-options.js';

/**
 * Runs the benchmark as `options.ranks` thread (or process) ranks and returns nccl-tests-style
 * rows. `env` replaces the ranks' environment (default: this process's), for settings read
 * when a rank starts, such as TSCCL_CHUNK_BYTES.
 */
export async function runBench(
  options: BenchOptions,
  launchOptions: { env?: NodeJS.ProcessEnv } = {},
): Promise<BenchRow[]> {
  const { results } = await launch({
    nprocPerNode: options.ranks,
    mode: options.procs ? 'processes' : 'threads',
    script: new URL('./bench-rank.js', import.meta.url).href,
    args: [JSON.stringify(options)],
    output: 'prefix',
    timeoutMs: options.timeoutMs,
    ...launchOptions,
  });
  return aggregateRows(options, results as (RankMeasurement | null)[][][]);
}

/** Averages each placement's time over ranks (nccl-tests' default) and sums wrong elements. */
export function aggregateRows(
  options: BenchOptions,
  perRank: readonly (readonly (readonly (RankMeasurement | null)[])[])[],
): BenchRow[] {
  const op = BENCH_OPS[options.op];
  const n = options.ranks;
  const wordSize = dtypeInfo(options.dtype).bytes;
  const rows: BenchRow[] = [];
  sweepSizes(options.minBytes, options.maxBytes, options.stepFactor, options.stepBytes).forEach((size, i) => {
    const counts = op.counts(Math.floor(size / wordSize), n);
    for (const [p, inPlace] of [false, true].entries()) {
      const measured = perRank.map((rank) => rank[i][p]);
      if (measured.some((m) => m === null)) continue;
      const timeUs = measured.reduce((a, m) => a + m!.timeUs, 0) / n;
      const algbwGBs = timeUs > 0 ? (counts.algorithm * wordSize) / (timeUs * 1000) : 0;
      rows.push({
        op: options.op,
        bytes: Math.max(counts.send, counts.recv) * wordSize,
        count: counts.param,
        dtype: options.dtype,
        redop: op.reduces ? options.redop : 'none',
        root: op.rooted ? options.root : -1,
        inPlace,
        timeUs,
        algbwGBs,
        busbwGBs: algbwGBs * op.busFactor(n),
        wrong: options.check ? measured.reduce((a, m) => a + m!.wrong, 0) : null,
        ranks: n,
        ...(measured[0]!.algorithm === undefined ? {} : { algorithm: measured[0]!.algorithm }),
        ...(options.compression === undefined
          ? {}
          : {
              wireBytes: measured[0]!.wireBytes ?? 0,
              maxError: options.check ? Math.max(...measured.map((m) => m!.maxError ?? 0)) : null,
            }),
      });
    }
  });
  return rows;
}
