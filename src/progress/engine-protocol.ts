import type { DType } from '../dtypes/dtype.js';

/**
 * Messages between a rank's thread and its progress engine (engine-worker.ts). Every field is
 * named; buffers travel as places in the shared arena, never as copies.
 */

/** Typed-array constructors a buffer may be rebuilt with on the engine's side, by name. */
export const TYPED_ARRAY_NAMES = [
  'Float32Array',
  'Float64Array',
  'Int8Array',
  'Uint8Array',
  'Int16Array',
  'Uint16Array',
  'Int32Array',
  'Uint32Array',
  'BigInt64Array',
  'BigUint64Array',
] as const;
export type TypedArrayName = (typeof TYPED_ARRAY_NAMES)[number];

/** A typed array in the arena: where it lies, how long it is, and how to view it. */
export interface ArenaBuffer {
  readonly byteOffset: number;
  readonly length: number;
  readonly ctor: TypedArrayName;
  /** The dtype it was allocated with (`comm.alloc`), where the constructor alone does not say (float16, bfloat16). */
  readonly dtype?: DType;
}

/** The calls the engine runs for the rank, each a method of the communicator it holds. */
export const ENGINE_CALLS = [
  'allReduce',
  'broadcast',
  'reduce',
  'allGather',
  'reduceScatter',
  'allToAll',
  'gather',
  'scatter',
  'barrier',
  'send',
  'recv',
  'split',
  'shrink',
  /** A communicator of the same ranks whose calls leave this one's numbering and records alone (options.label). */
  'sibling',
  'destroy',
] as const;
export type EngineCall = (typeof ENGINE_CALLS)[number];

/** From the rank to its engine. */
export type ToEngine =
  | {
      readonly kind: 'call';
      readonly id: number;
      /** Which of the engine's communicators (0: the world). */
      readonly comm: number;
      readonly call: EngineCall;
      readonly buffer?: ArenaBuffer;
      readonly output?: ArenaBuffer;
      readonly peer?: number;
      /** The call's options without buffers and signal (JSON only). */
      readonly options: Record<string, unknown>;
    }
  | { readonly kind: 'abortCall'; readonly id: number; readonly reason: string }
  | { readonly kind: 'abortComm'; readonly comm: number; readonly reason: string }
  /** The rank's script ended: leave politely, saying goodbye on every socket (answered with done). */
  | { readonly kind: 'leave'; readonly id: number }
  /** The rank's process is exiting now: tell every peer how far this rank got (answered in the reply block). */
  | { readonly kind: 'announceExit'; readonly reply: number }
  /** The rank was asked for its flight records (SIGUSR1, a failure): the engine holds them. */
  | { readonly kind: 'dump'; readonly reason: string }
  | {
      readonly kind: 'query';
      /** The question's number, under which the engine answers in the reply block (engine-reply.ts). */
      readonly reply: number;
      readonly comm: number;
      readonly what: 'flightRecords' | 'predict' | 'stats';
      readonly args?: { collective: string; bytes: number; options: Record<string, unknown> };
    };

/** A communicator the engine made (the world, a split, a shrink), as the rank sees it. */
export interface EngineCommInfo {
  readonly comm: number;
  readonly rank: number;
  readonly size: number;
  readonly name: string;
  readonly transportKind: 'shm' | 'tcp';
  /** The largest all-reduce a group fuses (Communicator.groupFusionMaxBytes). */
  readonly groupFusionMaxBytes: number;
}

/** From the engine to its rank. */
export type FromEngine =
  | { readonly kind: 'ready'; readonly memory: WebAssembly.Memory; readonly world: EngineCommInfo }
  /** `error` here and below: what errors.ts's serializeError made of the error. */
  | { readonly kind: 'startFailed'; readonly error: unknown }
  | { readonly kind: 'done'; readonly id: number; readonly comm?: EngineCommInfo | null }
  | { readonly kind: 'failed'; readonly id: number; readonly error: unknown };
