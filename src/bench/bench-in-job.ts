import { init } from '../comm/init.js';
import type { BenchOptions, BenchRow, RankMeasurement } from './bench-options.js';
import { measureRank } from './bench-rank.js';
import { aggregateRows } from './run-bench.js';

/**
 * `tsccl bench` started as one rank of a job (by tsccl launch, mpirun, srun), as nccl-tests runs
 * under mpirun: every rank measures, rank 0 collects everyone's figures and gets the rows.
 */
export async function benchInJob(
  options: Omit<BenchOptions, 'ranks'>,
): Promise<{ rank: number; rows: BenchRow[] | undefined }> {
  const comm = await init({ timeoutMs: options.timeoutMs });
  const full: BenchOptions = { ...options, ranks: comm.size };
  const mine = await measureRank(comm, full);
  // Two numbers per placement, NaN where a placement does not apply.
  const flat = new Float64Array(
    mine.flatMap((row) => row.flatMap((m) => (m === null ? [NaN, NaN] : [m.timeUs, m.wrong]))),
  );
  const everyone = new Float64Array(flat.length * comm.size);
  await comm.allGather(flat, { output: everyone });
  await comm.destroy();
  if (comm.rank !== 0) return { rank: comm.rank, rows: undefined };
  const perRank = Array.from({ length: full.ranks }, (_, r) =>
    mine.map((row, i) =>
      row.map((_, p) => {
        const at = r * flat.length + (i * row.length + p) * 2;
        return Number.isNaN(everyone[at])
          ? null
          : ({ timeUs: everyone[at], wrong: everyone[at + 1] } as RankMeasurement);
      }),
    ),
  );
  return { rank: 0, rows: aggregateRows(full, perRank) };
}
