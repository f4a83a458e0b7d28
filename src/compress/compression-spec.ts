import { paramInt } from '../config/params.js';
import { invalidArgument } from '../errors.js';

/**
 * Wire formats a collective can compress float data to. Numbers are explicit: they travel in
 * debug fingerprints and flight records, never as array positions.
 */
export const COMPRESSION_FORMATS = {
  fp16: 1,
  bf16: 2,
  fp8e4m3: 3,
  fp8e5m2: 4,
  int8: 5,
  int4: 6,
} as const;
export type CompressionFormat = keyof typeof COMPRESSION_FORMATS;

/**
 * Elements per scale of the blockwise formats (int8, int4, and the fp8 formats' power-of-two
 * scales) where a call does not say: TSCCL_COMPRESSION_BLOCK, 256 unless set
 * (bench/compression/block-size.mjs measured the error and codec speed that chose it).
 */
export const DEFAULT_BLOCK_SIZE = paramInt('TSCCL_COMPRESSION_BLOCK', process.env, 2);
/**
 * Values per piece of a compressed call (TSCCL_COMPRESSION_PIECE): the library pipelines pieces,
 * and the simulator prices them as it cuts them.
 */
export const PIECE_ELEMENTS = paramInt('TSCCL_COMPRESSION_PIECE', process.env, 1);
export const MAX_BLOCK_SIZE = 1 << 20;

/** What a call asked for: `compression: 'int8'` or `{ format: 'int8', blockSize: 128, residual }`. */
export type CompressionOption =
  | CompressionFormat
  | { format: CompressionFormat; blockSize?: number; shadow?: boolean; residual?: Float32Array };

export interface CompressionSpec {
  readonly format: CompressionFormat;
  readonly blockSize: number;
  /** Also compute the exact result and report the error compression made (comm.compressionReports). */
  readonly shadow: boolean;
  /**
   * Error feedback (reductions): the caller's array, one float32 per input element, zeros at
   * first. The call adds it to the input before encoding and leaves in it what this rank's
   * encoding lost, so the next call carries that error instead of dropping it.
   */
  readonly residual?: Float32Array;
}

export function isCompressionFormat(name: unknown): name is CompressionFormat {
  return typeof name === 'string' && Object.hasOwn(COMPRESSION_FORMATS, name);
}

const FORMAT_LIST = Object.keys(COMPRESSION_FORMATS).join(', ');

/** Checks a call's `compression` option (or TSCCL_COMPRESSION's text) on `rank`, naming what was expected. */
export function parseCompression(
  option: unknown,
  on: { rank?: number; argument?: string; defaultShadow?: boolean },
): CompressionSpec {
  const argument = on.argument ?? 'compression';
  const where = on.rank === undefined ? '' : `Rank ${on.rank}: `;
  const refuse = (what: string) => invalidArgument(`${where}${argument} ${what}`, { rank: on.rank, argument });
  const given =
    typeof option === 'string'
      ? { format: option }
      : typeof option === 'object' && option !== null
        ? option
        : undefined;
  if (given === undefined) throw refuse(`must be a format name or { format, blockSize }, got ${String(option)}`);
  for (const key of Object.keys(given)) {
    if (key !== 'format' && key !== 'blockSize' && key !== 'shadow' && key !== 'residual')
      throw refuse(`has an unknown key '${key}': it takes format, blockSize, shadow and residual`);
  }
  const {
    format,
    blockSize = DEFAULT_BLOCK_SIZE,
    shadow = on.defaultShadow ?? false,
    residual,
  } = given as Record<string, unknown>;
  if (!isCompressionFormat(format))
    throw refuse(`format '${String(format)}' is unknown: expected one of ${FORMAT_LIST}`);
  if (
    !Number.isInteger(blockSize) ||
    (blockSize as number) < 2 ||
    (blockSize as number) > MAX_BLOCK_SIZE ||
    (blockSize as number) % 2 !== 0
  )
    throw refuse(`blockSize must be an even integer from 2 to ${MAX_BLOCK_SIZE}, got ${String(blockSize)}`);
  if (typeof shadow !== 'boolean') throw refuse(`shadow must be true or false, got ${String(shadow)}`);
  if (residual !== undefined && !(residual instanceof Float32Array))
    throw refuse(`residual must be a Float32Array (one error term per input element), got ${String(residual)}`);
  return residual === undefined
    ? { format, blockSize: blockSize as number, shadow }
    : { format, blockSize: blockSize as number, shadow, residual };
}

/** How a spec reads in logs and flight records: `int8/256`. */
export function compressionLabel(spec: CompressionSpec): string {
  return spec.format === 'fp16' || spec.format === 'bf16' ? spec.format : `${spec.format}/${spec.blockSize}`;
}
