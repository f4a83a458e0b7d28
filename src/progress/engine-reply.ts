import { performance } from 'node:perf_hooks';
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

/**
 * Reply block: word 0 the number of the last answer written (0 before the first), word 1 its
 * JSON's byte length, the JSON from byte 8. The rank numbers its questions 1, 2, ...; the
 * engine answers them in the order they came, each under its question's number.
 */
const ANSWERED = 0;
const LENGTH = 1;
const DATA_OFFSET = 8;
export const REPLY_BYTES = 4 << 20;

export function replyBuffer(): SharedArrayBuffer {
  return new SharedArrayBuffer(REPLY_BYTES);
}

/** The engine's side: writes the answer to question `number` and wakes the rank. */
export function writeReply(reply: SharedArrayBuffer, number: number, answer: unknown): void {
  const words = new Int32Array(reply, 0, 2);
  let bytes = new TextEncoder().encode(JSON.stringify(answer));
  if (bytes.length > REPLY_BYTES - DATA_OFFSET)
    bytes = new TextEncoder().encode(
      JSON.stringify({ error: `reply of ${bytes.length} bytes exceeds ${REPLY_BYTES}` }),
    );
  new Uint8Array(reply, DATA_OFFSET, bytes.length).set(bytes);
  Atomics.store(words, LENGTH, bytes.length);
  Atomics.store(words, ANSWERED, number);
  Atomics.notify(words, ANSWERED);
}

/**
 * The rank's side: blocks until the engine has answered question `number` (a query of local
 * state, answered at once by a thread that is never blocked for long); undefined if no answer
 * came within `timeoutMs`. A wake-up is not an answer: the engine's notify for the question
 * before may come after the rank has read that answer and asked the next (the engine's thread
 * descheduled between its store and its notify), and an answer to a question the rank gave up
 * on may come late. Either found the old answer in the block, read as the new one's. Only the
 * number says whose answer the block holds; the engine writes the next one only once asked.
 */
export function readReply(reply: SharedArrayBuffer, number: number, timeoutMs: number): unknown {
  const words = new Int32Array(reply, 0, 2);
  const deadline = performance.now() + timeoutMs;
  for (;;) {
    const answered = Atomics.load(words, ANSWERED);
    if (answered === number) break;
    const left = deadline - performance.now();
    if (left <= 0) return undefined;
    Atomics.wait(words, ANSWERED, answered, left);
  }
  const length = Atomics.load(words, LENGTH);
  return JSON.parse(new TextDecoder().decode(new Uint8Array(reply, DATA_OFFSET, length).slice()));
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
