import { buildSchedule } from '../algorithms/registry.js';
import { type CallShape, REDUCING_COLLECTIVES, isRooted } from '../algorithms/schedule.js';
import { type DType, dtypeInfo } from '../dtypes/dtype.js';
import { COMPRESSION_FORMATS } from '../compress/compression-spec.js';
import { ErrorCode, TscclError } from '../errors.js';
import { executeSchedule } from '../exec/executor.js';
import { reduceKernel } from '../kernels/reduce-kernel.js';
import type { ReduceOp } from '../kernels/reduce-op.js';
import { type OpcodeName, type Transport, type WaitContext, opcodeName, opcodeOf } from '../transport/transport.js';
import type { CallPlan } from './call-plan.js';
import type { Workspaces } from './staging.js';

/** Numbers of the fingerprint's data types and reductions, fixed (pinned by test/errors-wire.test.ts). */
export const FINGERPRINT_DTYPES: Readonly<Record<DType, number>> = {
  float32: 0,
  float64: 1,
  int8: 2,
  uint8: 3,
  int32: 4,
  uint32: 5,
  int64: 6,
  uint64: 7,
  float16: 8,
  bfloat16: 9,
  float8e4m3: 10,
  float8e5m2: 11,
};
export const FINGERPRINT_REDUCE_OPS: Readonly<Record<ReduceOp, number>> = { sum: 0, prod: 1, min: 2, max: 3, avg: 4 };

const dtypeOfNumber = new Map(Object.entries(FINGERPRINT_DTYPES).map(([name, n]) => [n, name]));
const formatOfNumber = new Map<number, string>(Object.entries(COMPRESSION_FORMATS).map(([name, n]) => [n, name]));
const reduceOpOfNumber = new Map(Object.entries(FINGERPRINT_REDUCE_OPS).map(([name, n]) => [n, name]));

/**
 * Eight numbers that describe a collective call; ranks compare them under TSCCL_DEBUG_CHECK. The
 * seventh is the wire format of a compressed call (COMPRESSION_FORMATS), 0 for none.
 */
export function fingerprintOf(
  seq: number,
  op: OpcodeName,
  dtype: DType,
  count: number,
  root: number,
  redop: ReduceOp,
  reduces: boolean,
  compression = 0,
): number[] {
  return [
    seq,
    opcodeOf(op),
    FINGERPRINT_DTYPES[dtype],
    count,
    root,
    reduces ? FINGERPRINT_REDUCE_OPS[redop] : -1,
    compression,
    0,
  ];
}

function describe(f: Float64Array, at: number): string {
  const op = opcodeName(f[at + 1]);
  const compression = f[at + 6] > 0 ? `, compressed ${formatOfNumber.get(f[at + 6]) ?? '?'}` : '';
  return `${op} #${f[at]}(${dtypeOfNumber.get(f[at + 2]) ?? '?'}, count ${f[at + 3]}${f[at + 5] >= 0 ? `, ${reduceOpOfNumber.get(f[at + 5])}` : ''}${isRooted(op) ? `, root ${f[at + 4]}` : ''}${compression})`;
}

/** Throws on every rank alike if any rank's fingerprint differs from rank 0's. */
export function checkFingerprints(all: Float64Array, rank: number, commName: string): void {
  const n = all.length / 8;
  // All-to-all-v counts legitimately differ between ranks; everything else must agree.
  const variableCount = opcodeName(all[1]) === 'allToAll';
  for (let r = 1; r < n; r++) {
    for (let k = 0; k < 7; k++) {
      if (k === 3 && variableCount) continue;
      if (all[r * 8 + k] !== all[k]) {
        throw new TscclError(
          ErrorCode.MISMATCH,
          `Desync on ${commName}: rank 0 called ${describe(all, 0)} but rank ${r} called ${describe(all, r * 8)} (seen on rank ${rank}, TSCCL_DEBUG_CHECK=1)`,
          { rank, peer: r, op: opcodeName(all[1]), seq: all[0] },
        );
      }
    }
  }
}

/**
 * TSCCL_DEBUG_CHECK: ranks all-gather a fingerprint of call `seq` (operation, dtype, count, root,
 * reduction) before running it; any difference fails every rank, naming both sides.
 */
export async function checkSameCall(
  plan: CallPlan,
  on: { seq: number; ctx: WaitContext; rank: number; name: string; transport: Transport; workspaces: Workspaces },
): Promise<void> {
  const { seq, rank, transport } = on;
  const size = plan.shape.nranks;
  const info = dtypeInfo('float64');
  const mine = on.workspaces.get('check-mine', info, 8) as Float64Array;
  const all = on.workspaces.get('check-all', info, 8 * size) as Float64Array;
  mine.set(
    fingerprintOf(
      seq,
      plan.collective,
      plan.dtype.name,
      plan.shape.count,
      plan.shape.root,
      plan.op,
      REDUCING_COLLECTIVES.has(plan.collective),
      plan.compression === undefined ? 0 : COMPRESSION_FORMATS[plan.compression.format],
    ),
  );
  const shape: CallShape = { collective: 'allGather', nranks: size, count: 8, root: 0, inPlace: false, chunkCount: 0 };
  await executeSchedule({
    schedule: buildSchedule(shape, rank, 'ring'),
    buffers: { input: mine, output: all, scratch: mine },
    dtype: info,
    kernel: reduceKernel('float64', 'sum'),
    transport,
    tag: { seq, opcode: opcodeOf('check') },
    ctx: on.ctx,
    channelBase: 0,
  });
  checkFingerprints(all, rank, on.name);
}
