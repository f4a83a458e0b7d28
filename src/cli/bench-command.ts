import type { Command, Option } from 'commander';
import type { BenchOptions } from '../bench/bench-options.js';
import { averageBusBandwidth, formatTable } from '../bench/format-table.js';
import { runBench } from '../bench/run-bench.js';
import { benchInJob } from '../bench/bench-in-job.js';
import { jobFromEnv } from '../job/env-job.js';
import { dtypeInfo } from '../dtypes/dtype.js';
import { invalidArgument } from '../errors.js';
import { checkOpForType, parseReduceOp } from '../kernels/reduce-op.js';
import { BENCH_OPS, BENCH_OP_NAMES, benchOp, parseSize } from '../algorithms/bench-ops.js';
import { SMALL_CALL_WARMUP } from '../bench/warm-up.js';
import { checkSelectable } from '../tuner/select.js';
import { ONE_SHOT_CAPACITY } from '../tuner/predict.js';
import { ONE_SHOT, oneShotOffer } from '../exec/one-shot.js';
import { guard, parseNonNegativeInt, parsePositiveInt, parseStepFactor } from './parse.js';
import { type CompressionFormat, parseCompression } from '../compress/compression-spec.js';

export function benchCommand(program: Command, format: Option, setExitCode: (code: number) => void): void {
  program
    .command('bench')
    .description('measure a collective over thread ranks and print an nccl-tests-style table')
    .option(
      '-o, --op <op>',
      `collective: ${BENCH_OP_NAMES.join(', ')}`,
      (v) => guard(() => benchOp(v).name),
      'all_reduce',
    )
    .option('-g, --ranks <n>', 'number of thread ranks', (v) => parsePositiveInt(v, '--ranks'), 2)
    .option(
      '-b, --minbytes <size>',
      'smallest size (8, 64K, 64M, 1G)',
      (v) => guard(() => parseSize(v, '--minbytes')),
      32 * 1024 * 1024,
    )
    .option('-e, --maxbytes <size>', 'largest size', (v) => guard(() => parseSize(v, '--maxbytes')), 32 * 1024 * 1024)
    .option('-f, --stepfactor <factor>', 'multiply the size by this between rows', parseStepFactor, 2)
    .option(
      '-i, --stepbytes <size>',
      'add this between rows when the factor is 1',
      (v) => guard(() => parseSize(v, '--stepbytes')),
      1024 * 1024,
    )
    .option('-n, --iters <n>', 'timed iterations per size', (v) => parsePositiveInt(v, '--iters'), 20)
    .option('-w, --warmup_iters <n>', 'untimed iterations first', (v) => parseNonNegativeInt(v, '--warmup_iters'), 5)
    .option(
      '--warmup_small <n>',
      `sizes up to 256 KiB warm up at least this many calls (V8 optimises a call path over its first thousands of calls); 0: -w alone, as nccl-tests`,
      (v) => parseNonNegativeInt(v, '--warmup_small'),
      SMALL_CALL_WARMUP,
    )
    .option('-c, --check <0|1>', 'check results against a reference', (v) => parseNonNegativeInt(v, '--check'), 1)
    .option(
      '-d, --datatype <type>',
      'float32 (float), float64 (double), int8, uint8, int32, uint32, int64, uint64, float16 (half), bfloat16',
      (v) => guard(() => dtypeInfo(v, '--datatype').name),
      'float32',
    )
    .option(
      '-R, --op-reduce <redop>',
      'reduction: sum, prod, min, max, avg',
      (v) => guard(() => parseReduceOp(v, '--op-reduce')),
      'sum',
    )
    .option('-r, --root <rank>', 'root of rooted collectives', (v) => parseNonNegativeInt(v, '--root'), 0)
    .option('--algo <name>', "force an algorithm instead of the tuner's choice")
    .option(
      '--compression <format>',
      'compress all_reduce, reduce_scatter, reduce, all_gather, broadcast on the wire: fp16, bf16, fp8e4m3, fp8e5m2, int8, int4 (adds wire bytes and max error columns)',
      (v) => guard(() => parseCompression(v, { argument: '--compression' }).format),
    )
    .option('--timeout-ms <ms>', 'timeout of each call', (v) => parsePositiveInt(v, '--timeout-ms'), 120_000)
    .option('--procs', 'ranks as processes over TCP (default: threads over shared memory)')
    .addOption(format)
    .action(async (flags: Record<string, unknown>) => {
      const options: BenchOptions = {
        op: flags.op as BenchOptions['op'],
        ranks: flags.ranks as number,
        minBytes: flags.minbytes as number,
        maxBytes: flags.maxbytes as number,
        stepFactor: flags.stepfactor as number,
        stepBytes: flags.stepbytes as number,
        iters: flags.iters as number,
        warmupIters: flags.warmup_iters as number,
        warmupSmall: flags.warmup_small as number,
        check: (flags.check as number) !== 0,
        dtype: flags.datatype as BenchOptions['dtype'],
        redop: flags.opReduce as BenchOptions['redop'],
        root: flags.root as number,
        algorithm: flags.algo as string | undefined,
        timeoutMs: flags.timeoutMs as number,
        procs: flags.procs === true,
        ...(flags.compression === undefined ? {} : { compression: flags.compression as CompressionFormat }),
      };
      const job = jobFromEnv();
      const inJob = job !== undefined && job.size > 1;
      if (inJob) (options as { ranks: number }).ranks = job.size;
      if (options.root >= options.ranks)
        throw invalidArgument(`--root ${options.root} must be below --ranks ${options.ranks}`, { argument: '--root' });
      if (options.minBytes > options.maxBytes)
        throw invalidArgument(`--minbytes ${options.minBytes} must not exceed --maxbytes ${options.maxBytes}`, {
          argument: '--minbytes',
        });
      if (BENCH_OPS[options.op].reduces) checkOpForType(options.redop, dtypeInfo(options.dtype), '--op-reduce');
      if (options.algorithm !== undefined) checkAlgorithm(options.op, options.algorithm);
      if (options.compression !== undefined) checkCompressible(options);
      if (options.algorithm === ONE_SHOT && !inJob) checkOneShotFits(options);
      let rows: Awaited<ReturnType<typeof runBench>>;
      if (inJob) {
        // Started as one rank of a job (tsccl launch, mpirun, srun): rank 0 reports for all.
        const mine = await benchInJob(options);
        if (mine.rows === undefined) {
          setExitCode(0);
          return;
        }
        rows = mine.rows;
      } else {
        rows = await runBench(options);
      }
      const wrong = rows.reduce((a, r) => a + (r.wrong ?? 0), 0);
      if (flags.format === 'json') {
        process.stdout.write(
          `${JSON.stringify({ tool: 'tsccl bench', transport: inJob || options.procs ? 'tcp' : 'shm', options, rows, avgBusbwGBs: averageBusBandwidth(rows), wrong }, null, 2)}\n`,
        );
      } else {
        process.stdout.write(
          `${formatTable(options, rows, `tsccl bench ${options.op}: ${options.ranks} ${inJob ? `ranks of a ${job!.source} job` : options.procs ? 'process ranks over TCP' : 'thread ranks over shared memory'}`)}\n`,
        );
      }
      setExitCode(wrong > 0 ? 1 : 0);
    });
}

/** Before any rank starts: an --algo the op cannot run would otherwise fail every rank at its first call. */
function checkAlgorithm(op: BenchOptions['op'], algorithm: string): void {
  const collective = BENCH_OPS[op].collective;
  if (collective === undefined)
    throw invalidArgument(`--algo does not apply to ${op}: it is point-to-point`, { argument: '--algo' });
  checkSelectable(collective, algorithm, { argument: '--algo', op });
}

/** Before any rank starts: compression takes float data of the five collectives that reduce or spread it. */
function checkCompressible(options: BenchOptions): void {
  const compressible = ['all_reduce', 'reduce_scatter', 'reduce', 'all_gather', 'broadcast'];
  if (!compressible.includes(options.op))
    throw invalidArgument(`--compression applies to ${compressible.join(', ')}, not ${options.op}`, {
      argument: '--compression',
    });
  if (!['float32', 'float16', 'bfloat16'].includes(options.dtype))
    throw invalidArgument(`--compression takes float32, float16 or bfloat16 data, not ${options.dtype}`, {
      argument: '--compression',
    });
  if (BENCH_OPS[options.op].reduces && options.redop !== 'sum' && options.redop !== 'avg')
    throw invalidArgument(`--compression reduces with sum or avg, not ${options.redop}`, { argument: '--compression' });
  if (options.algorithm !== undefined)
    throw invalidArgument('--compression runs its own schedule: drop --algo', { argument: '--compression' });
}

/**
 * Before any rank starts: the one-shot path carries a whole call in one slot, so a sweep whose
 * largest call does not fit would fail every rank there. The slots are the transport's.
 */
function checkOneShotFits(options: BenchOptions): void {
  const op = BENCH_OPS[options.op];
  const elementBytes = dtypeInfo(options.dtype).bytes;
  const count = op.counts(Math.floor(options.maxBytes / elementBytes), options.ranks).param;
  const shape = {
    collective: op.collective!,
    nranks: options.ranks,
    count,
    root: options.root,
    inPlace: false,
    chunkCount: 0,
  };
  const offer = oneShotOffer(shape, elementBytes, ONE_SHOT_CAPACITY[options.procs ? 'tcp' : 'shm']);
  if (offer.bytes > offer.capacity) {
    throw invalidArgument(
      `--algo ${ONE_SHOT} carries messages of at most ${offer.capacity} bytes on ${options.procs ? 'process ranks over TCP' : 'thread ranks'}; ` +
        `at -e ${options.maxBytes} a rank's ${options.op} message is ${offer.bytes} bytes: lower --maxbytes`,
      { argument: '--maxbytes' },
    );
  }
}
