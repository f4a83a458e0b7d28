import type { Collective } from '../algorithms/schedule.js';
import { type CompressionSpec, parseCompression } from '../compress/compression-spec.js';
import { paramInt, paramString } from '../config/params.js';
import { parseAlgorithmOverrides } from '../tuner/select.js';

/** What the environment decides for every call on every communicator, read once. */

/** TSCCL_ALGO: an algorithm forced per collective. */
export const algorithmOverrides: ReadonlyMap<Collective, string> = parseAlgorithmOverrides(process.env.TSCCL_ALGO);
/** TSCCL_DEBUG_CHECK=1: ranks compare a fingerprint of every call before running it. */
export const debugCheck = paramString('TSCCL_DEBUG_CHECK') === '1';
/** TSCCL_CHECKSUM=1 or 0 decides for every transport; unset leaves each its default (TCP to other machines on, else off). */
export const checksumDefault = paramString('TSCCL_CHECKSUM') === '' ? undefined : paramString('TSCCL_CHECKSUM') === '1';
/** TSCCL_COMPRESSION_SHADOW=1: compressed calls also compute the exact result and report the error. */
export const compressionShadowDefault = paramString('TSCCL_COMPRESSION_SHADOW') === '1';
/** TSCCL_COMPRESSION: the wire format of calls that do not choose one (its block size TSCCL_COMPRESSION_BLOCK, as every call's). */
export const compressionDefault: CompressionSpec | undefined = ((format) =>
  format === '' || format === 'none'
    ? undefined
    : parseCompression({ format }, { argument: 'TSCCL_COMPRESSION', defaultShadow: compressionShadowDefault }))(
  paramString('TSCCL_COMPRESSION').toLowerCase(),
);

/** TSCCL_OP_RETRIES: how often a collective that failed on a link (every rank alive) is run again (operation-retry.ts). */
export const opRetries = paramInt('TSCCL_OP_RETRIES');
/** TSCCL_OP_RETRY_SAVE_INPUT=1: in-place calls that overwrite their input keep a copy, so they can be run again. */
export const saveInputForRetry = paramString('TSCCL_OP_RETRY_SAVE_INPUT') === '1';
