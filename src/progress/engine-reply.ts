import type { ThreadRankBootstrap } from '../job/bootstrap.js';

/** What a rank hands its engine thread at start. */
export interface EngineData {
  /** The rank's own bootstrap where it is a thread rank: the engine joins the same world as the same rank. */
  readonly tsccl?: ThreadRankBootstrap;
  readonly engine: {
    readonly defaultTimeoutMs: number;
    /** Where the engine answers a query the rank waits for synchronously (see readReply). */
    readonly reply: SharedArrayBuffer;
    /** Int32 completion flags by call id (see markFinished). */
    readonly completions: SharedArrayBuffer;
  };
}

/** Reply block: word 0 the state, word 1 the JSON's byte length, the JSON from byte 8. */
const STATE = 0;
const LENGTH = 1;
const DATA_OFFSET = 8;
const EMPTY = 0;
const WRITTEN = 1;
export const REPLY_BYTES = 4 << 20;

export function replyBuffer(): SharedArrayBuffer {
  return new SharedArrayBuffer(REPLY_BYTES);
}

/** The engine's side: writes the answer and wakes the rank. */
export function writeReply(reply: SharedArrayBuffer, answer: unknown): void {
  const words = new Int32Array(reply, 0, 2);
  let bytes = new TextEncoder().encode(JSON.stringify(answer));
  if (bytes.length > REPLY_BYTES - DATA_OFFSET)
    bytes = new TextEncoder().encode(
      JSON.stringify({ error: `reply of ${bytes.length} bytes exceeds ${REPLY_BYTES}` }),
    );
  new Uint8Array(reply, DATA_OFFSET, bytes.length).set(bytes);
  Atomics.store(words, LENGTH, bytes.length);
  Atomics.store(words, STATE, WRITTEN);
  Atomics.notify(words, STATE);
}

/**
 * The rank's side: blocks until the engine has answered (a query of local state, answered at
 * once by a thread that is never blocked for long), then clears the block for the next one.
 * Undefined if no answer came within `timeoutMs`.
 */
export function readReply(reply: SharedArrayBuffer, timeoutMs: number): unknown {
  const words = new Int32Array(reply, 0, 2);
  if (Atomics.wait(words, STATE, EMPTY, timeoutMs) === 'timed-out' && Atomics.load(words, STATE) === EMPTY)
    return undefined;
  const length = Atomics.load(words, LENGTH);
  const text = new TextDecoder().decode(new Uint8Array(reply, DATA_OFFSET, length).slice());
  Atomics.store(words, STATE, EMPTY);
  return JSON.parse(text);
}

/** Calls whose completion flags live at once; a call's slot is its id modulo this. */
export const COMPLETION_SLOTS = 4096;

export function completionFlags(): SharedArrayBuffer {
  return new SharedArrayBuffer(COMPLETION_SLOTS * 4);
}

/** The engine's side: call `id` has ended, before the rank hears of it. */
export function markFinished(completions: SharedArrayBuffer, id: number): void {
  Atomics.store(new Int32Array(completions), id % COMPLETION_SLOTS, id + 1);
}

/** The rank's side: has call `id` ended? (False once a later call took its slot: the promise then says.) */
export function isFinished(flags: Int32Array, id: number): boolean {
  return Atomics.load(flags, id % COMPLETION_SLOTS) === id + 1;
}
