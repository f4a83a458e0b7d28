/**
 * What every transport offers the executor: ordered, matched messages between two ranks on a
 * numbered channel. Shared memory and TCP implement it and pass one conformance suite.
 *
 * A send hands over a view of the sender's registered memory and returns at once (after queue
 * space is free); the view must stay untouched until `isDelivered` says the peer has consumed it.
 * A recv hands the incoming bytes to `consume` in one or more pieces whose offsets and lengths
 * are multiples of `elementBytes`; shared memory passes one piece that is the sender's own memory,
 * so a reduction reads it in place.
 */
export interface MessageTag {
  /** The collective's sequence number on its communicator, or the point-to-point counter. */
  readonly seq: number;
  /** Which operation sent it, to name both sides of a mismatch. */
  readonly opcode: number;
  /** Checksum this message end to end (TCP does by default). */
  readonly checksum?: boolean;
}

export interface SendHandle {
  readonly peer: number;
  readonly channel: number;
  readonly ticket: number;
}

/** Bounds every blocking wait: throws TscclError on timeout, abort or a failed peer. */
export interface WaitContext {
  /** Throws if the operation must end now. */
  check(): void;
  /** How long one blocking wait may sleep before check() runs again, in ms. */
  sliceMs(): number;
  /** How long to spin before sleeping, in ms. */
  readonly spinMs: number;
}

export type Consume = (piece: Uint8Array, byteOffset: number) => void;

export interface Transport {
  readonly rank: number;
  readonly nranks: number;
  send(peer: number, channel: number, data: Uint8Array, tag: MessageTag, ctx: WaitContext): Promise<SendHandle>;
  recv(peer: number, channel: number, bytes: number, elementBytes: number, tag: MessageTag, consume: Consume, ctx: WaitContext): Promise<void>;
  isDelivered(handle: SendHandle): boolean;
  waitDelivered(handle: SendHandle, ctx: WaitContext): Promise<void>;
  /**
   * Optional fast path for transports that can answer without waiting (shared memory): post now,
   * or undefined if the send would have to wait for queue space.
   */
  trySend?(peer: number, channel: number, data: Uint8Array, tag: MessageTag): SendHandle | undefined;
  /** Receive now, or false if the message is not there yet. Throws on a mismatch, as recv does. */
  tryRecv?(peer: number, channel: number, bytes: number, elementBytes: number, tag: MessageTag, consume: Consume): boolean;
}

export const OPCODES = ['allReduce', 'broadcast', 'reduce', 'allGather', 'reduceScatter', 'allToAll', 'gather', 'scatter', 'barrier', 'send', 'check'] as const;

export function opcodeOf(name: (typeof OPCODES)[number]): number {
  return OPCODES.indexOf(name);
}

export function opcodeName(code: number): string {
  return OPCODES[code] ?? `op#${code}`;
}
