import { type DType, type TypedArray, isTypedArray } from '../dtypes/dtype.js';
import { ErrorCode, TscclError, invalidArgument } from '../errors.js';
import type { ReduceOp } from '../kernels/reduce-op.js';
import { describe } from './validate.js';
import { closestName } from '../config/closest-name.js';
import type { CompressionOption } from '../compress/compression-spec.js';

/**
 * The options object of every public call, and the one check that knows which keys each call
 * takes: a misspelled key would otherwise be ignored silently (`{ opp: 'max' }` summing), so it
 * is refused on the calling rank, before anything blocks, with the closest valid name. Keys are
 * checked for their JavaScript type here; what a value means (a root within the communicator,
 * a known reduction) is checked where the call uses it.
 */
export interface CallOptions {
  /** Ends the call with TSCCL_ERR_TIMEOUT after this many ms (default TSCCL_TIMEOUT_MS). */
  timeoutMs?: number;
  /** Ends the call with TSCCL_ERR_ABORTED when aborted. */
  signal?: AbortSignal;
  /** CRC32 every message of this call end to end (default from TSCCL_CHECKSUM). */
  checksum?: boolean;
}

/** The `timeoutMs` and `signal` that `options` sets, and no other key: what a caller passes on to the calls it makes. */
export function callOptionsOf({ timeoutMs, signal }: CallOptions): CallOptions {
  const call: CallOptions = {};
  if (timeoutMs !== undefined) call.timeoutMs = timeoutMs;
  if (signal !== undefined) call.signal = signal;
  return call;
}

/** Options of every collective that moves data. */
export interface CollectiveOptions extends CallOptions {
  /** Result buffer; omit for in place. */
  output?: TypedArray;
  /** Needed for Uint16Array data ('float16' or 'bfloat16') unless the array came from comm.alloc. */
  dtype?: DType;
  /** Force an algorithm (as TSCCL_ALGO does); the tuner's choice otherwise. */
  algorithm?: string;
  /**
   * allReduce, reduceScatter, reduce, allGather and broadcast of float32, float16 or bfloat16
   * data: the wire format ('fp16', 'bf16', 'fp8e4m3', 'fp8e5m2', 'int8', 'int4', or 'none'), or
   * { format, blockSize, shadow } (default from TSCCL_COMPRESSION). See docs/COMPRESSION.md.
   */
  compression?: CompressionOption | 'none';
}

/** allReduce and reduceScatter. */
export interface ReduceOptions extends CollectiveOptions {
  /** Reduction operation (default 'sum'). */
  op?: ReduceOp;
}

/** broadcast, gather and scatter. */
export interface RootedOptions extends CollectiveOptions {
  root?: number;
}

/** reduce. */
export interface RootedReduceOptions extends ReduceOptions {
  root?: number;
}

export interface AllToAllOptions extends CollectiveOptions {
  /** Elements this rank sends to each peer (all-to-all-v); equal blocks when omitted. */
  sendCounts?: number[];
  /** Elements this rank receives from each peer. */
  recvCounts?: number[];
  /** Where each peer's block starts in the input; packed when omitted. */
  sendDispls?: number[];
  recvDispls?: number[];
}

export interface ShrinkOptions extends CallOptions {
  /** Ranks to leave out (lost or failed ones); every other rank must call shrink with the same list. */
  exclude: number[];
}

export interface SplitOptions extends CallOptions {
  /** Ranks with the same color form a communicator; null or a negative color takes no part. */
  color: number | null;
  /** Orders ranks in the new communicator (default: rank in this one). */
  key?: number;
}

export interface PredictOptions {
  dtype?: DType;
  algorithm?: string;
  /** Predict a checksummed call (default from TSCCL_CHECKSUM), which runs without the one-shot path. */
  checksum?: boolean;
  /** Predict the call in place (no `output`), whose schedules may differ: default false. */
  inPlace?: boolean;
}

/** A key's type: what it must be, and the test. */
interface KeyType {
  readonly expected: string;
  readonly test: (value: unknown) => boolean;
}

const isInteger = (v: unknown) => Number.isInteger(v);
const isString = (v: unknown) => typeof v === 'string';
const isIntegerArray = (v: unknown) => Array.isArray(v) && v.every(isInteger);

const TYPES = {
  timeoutMs: { expected: 'a positive number of ms', test: (v) => typeof v === 'number' && v > 0 },
  signal: { expected: 'an AbortSignal', test: (v) => v instanceof AbortSignal },
  checksum: { expected: 'true or false', test: (v) => typeof v === 'boolean' },
  inPlace: { expected: 'true or false', test: (v) => typeof v === 'boolean' },
  op: { expected: 'the name of a reduction', test: isString },
  output: { expected: 'a typed array', test: isTypedArray },
  dtype: { expected: 'the name of a dtype', test: isString },
  algorithm: { expected: 'the name of an algorithm', test: isString },
  compression: {
    expected: 'a format name or { format, blockSize, shadow }',
    test: (v) => isString(v) || (typeof v === 'object' && v !== null && !Array.isArray(v)),
  },
  root: { expected: 'an integer', test: isInteger },
  sendCounts: { expected: 'an array of integers', test: isIntegerArray },
  recvCounts: { expected: 'an array of integers', test: isIntegerArray },
  sendDispls: { expected: 'an array of integers', test: isIntegerArray },
  recvDispls: { expected: 'an array of integers', test: isIntegerArray },
  color: { expected: 'an integer or null', test: (v) => v === null || Number.isInteger(v) },
  key: { expected: 'an integer', test: isInteger },
  exclude: { expected: 'an array of integers', test: isIntegerArray },
  progress: { expected: "'inline', 'engine' or 'auto'", test: (v) => v === 'inline' || v === 'engine' || v === 'auto' },
} satisfies Record<string, KeyType>;

type Key = keyof typeof TYPES;
const CALL: Key[] = ['timeoutMs', 'signal', 'checksum'];
const COLLECTIVE: Key[] = [...CALL, 'output', 'dtype', 'algorithm'];

/** The keys each public call takes (the option interfaces above, as data). */
const KEYS = {
  allReduce: [...COLLECTIVE, 'op', 'compression'],
  reduceScatter: [...COLLECTIVE, 'op', 'compression'],
  reduce: [...COLLECTIVE, 'op', 'root', 'compression'],
  broadcast: [...COLLECTIVE, 'root', 'compression'],
  gather: [...COLLECTIVE, 'root'],
  scatter: [...COLLECTIVE, 'root'],
  allGather: [...COLLECTIVE, 'compression'],
  allToAll: [...COLLECTIVE, 'sendCounts', 'recvCounts', 'sendDispls', 'recvDispls'],
  barrier: CALL,
  send: CALL,
  recv: CALL,
  split: [...CALL, 'color', 'key'],
  shrink: [...CALL, 'exclude'],
  predict: ['dtype', 'algorithm', 'checksum', 'inPlace'],
  init: ['timeoutMs', 'progress'],
  group: ['timeoutMs', 'signal'],
} satisfies Record<string, Key[]>;

/** A public call that takes an options object. */
export type OptionsCall = keyof typeof KEYS;

const ALLOWED: Readonly<Record<OptionsCall, ReadonlyMap<string, KeyType>>> = Object.fromEntries(
  Object.entries(KEYS).map(([call, keys]) => [call, new Map(keys.map((k) => [k, TYPES[k]]))]),
) as unknown as Record<OptionsCall, ReadonlyMap<string, KeyType>>;

/** A call's settings after the check: its deadline, signal and checksum choice. */
export interface CallSettings {
  readonly timeoutMs: number;
  readonly signal: AbortSignal | undefined;
  readonly checksum: boolean | undefined;
}

/**
 * Checks `options` of `call` on this rank: an object, only keys the call takes, each of its type
 * (undefined counts as absent); a signal already aborted ends the call with TSCCL_ERR_ABORTED.
 * Runs on every call, so a known key costs a map lookup and a type test.
 */
export function checkOptions(
  call: OptionsCall,
  options: unknown,
  where: { rank?: number; defaultTimeoutMs: number; defaults?: CallSettings },
): CallSettings {
  const { rank } = where;
  if (typeof options !== 'object' || options === null) {
    throw invalidArgument(`${rankPrefix(rank)}options must be an object, got ${describe(options)}`, {
      rank,
      argument: 'options',
    });
  }
  const allowed = ALLOWED[call];
  const given = options as Record<string, unknown>;
  for (const key in given) {
    const type = allowed.get(key);
    if (type === undefined) throw unknownOption(call, key, rankPrefix(rank), rank);
    const value = given[key];
    if (value !== undefined && !type.test(value)) {
      throw invalidArgument(`${rankPrefix(rank)}${key} must be ${type.expected}, got ${describe(value)}`, {
        rank,
        argument: key,
        op: call,
      });
    }
  }
  const { timeoutMs = where.defaultTimeoutMs, signal, checksum } = given as CallOptions;
  if (signal?.aborted) {
    throw new TscclError(
      ErrorCode.ABORTED,
      `${rankPrefix(rank)}the call's signal was already aborted: ${String(signal.reason)}`,
      {
        rank,
        argument: 'signal',
      },
    );
  }
  // A call that sets none of them shares one settings object: an object per call is garbage.
  if (signal === undefined && checksum === undefined && timeoutMs === where.defaultTimeoutMs)
    return (where.defaults ??= { timeoutMs, signal, checksum });
  return { timeoutMs, signal, checksum };
}

/** "Rank r: " to begin an error's message (nothing for init, which checks its options before its rank is known). */
function rankPrefix(rank: number | undefined): string {
  return rank === undefined ? '' : `Rank ${rank}: `;
}

function unknownOption(call: OptionsCall, key: string, on: string, rank: number | undefined): TscclError {
  const valid = KEYS[call] as readonly string[];
  const closest = closestName(key, valid);
  const hint = closest !== undefined ? `did you mean '${closest}'?` : `it takes ${valid.join(', ')}`;
  return invalidArgument(`${on}unknown option '${key}' for ${call}; ${hint}`, { rank, argument: key, op: call });
}

export { closestName };
