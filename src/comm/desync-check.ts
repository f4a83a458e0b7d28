import { DTYPE_NAMES } from '../dtypes/dtype.js';
import { ErrorCode, TscclError } from '../errors.js';
import { REDUCE_OPS } from '../kernels/reduce-op.js';
import { OPCODES, opcodeName } from '../transport/transport.js';

/** Eight numbers that describe a collective call; ranks compare them under TSCCL_DEBUG_CHECK. */
export function fingerprintOf(seq: number, op: string, dtype: string, count: number, root: number, redop: string, reduces: boolean): number[] {
  return [seq, OPCODES.indexOf(op as never), DTYPE_NAMES.indexOf(dtype as never), count, root, reduces ? REDUCE_OPS.indexOf(redop as never) : -1, 0, 0];
}

function describe(f: Float64Array, at: number): string {
  const op = opcodeName(f[at + 1]);
  const rooted = op === 'broadcast' || op === 'reduce' || op === 'gather' || op === 'scatter';
  return `${op} #${f[at]}(${DTYPE_NAMES[f[at + 2]] ?? '?'}, count ${f[at + 3]}${f[at + 5] >= 0 ? `, ${REDUCE_OPS[f[at + 5]]}` : ''}${rooted ? `, root ${f[at + 4]}` : ''})`;
}

/** Throws on every rank alike if any rank's fingerprint differs from rank 0's. */
export function checkFingerprints(all: Float64Array, rank: number, commName: string): void {
  const n = all.length / 8;
  // All-to-all-v counts legitimately differ between ranks; everything else must agree.
  const variableCount = opcodeName(all[1]) === 'allToAll';
  for (let r = 1; r < n; r++) {
    for (let k = 0; k < 6; k++) {
      if (k === 3 && variableCount) continue;
      if (all[r * 8 + k] !== all[k]) {
        throw new TscclError(ErrorCode.MISMATCH,
          `Desync on ${commName}: rank 0 called ${describe(all, 0)} but rank ${r} called ${describe(all, r * 8)} (seen on rank ${rank}, TSCCL_DEBUG_CHECK=1)`,
          { rank, peer: r, op: opcodeName(all[1]), seq: all[0] });
      }
    }
  }
}
