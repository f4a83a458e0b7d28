import { ErrorCode, TscclError } from '../errors.js';

/**
 * What every transport offers the executor: ordered, matched messages between two ranks on a
 * numbered channel. Shared memory and TCP implement it and pass one conformance suite.
 *
 * A send hands over a view of the sender's registered memory and returns at once (after queue
 * space is free); the view must stay untouched until `isDelivered` says the transport is done
 * with it: the peer has consumed it (shared memory, read in place), or the bytes were copied
 * (a socket took them, or TCP copied a small message into its frame).
 * A recv hands the incoming bytes to `consume` in one or more pieces whose offsets and lengths
 * are multiples of `elementBytes` (any bytes, for a consumer that names its destination, see
 * Consume); shared memory passes one piece that is the sender's own memory, so a reduction reads
 * it in place.
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

/** How a wait spins before it sleeps. */
export interface SpinPolicy {
  /** How long to spin before sleeping, in ms. */
  readonly spinMs: number;
  /** Give the core to any other runnable thread on every turn of the spin (sched_yield). */
  readonly spinYields: boolean;
}

/** Bounds every blocking wait: throws TscclError on timeout, abort or a failed peer. */
export interface WaitContext extends SpinPolicy {
  /** Throws if the operation must end now. */
  check(): void;
  /** How long one blocking wait may sleep before check() runs again, in ms. */
  sliceMs(): number;
  /** Counts a step of the call done, so that a timeout tells a call still moving from one whose data stopped. */
  stepDone?(): void;
}

/**
 * Takes one received piece of a message. A plain receive names the memory the message is
 * copied into as `into`, so a transport that reads from a socket may read straight there; the
 * piece it then hands over already is that memory, and nothing is copied. Such a consumer copies
 * bytes, so its pieces need not be whole elements.
 */
export interface Consume {
  (piece: Uint8Array, byteOffset: number): void;
  readonly into?: Uint8Array;
}

/** The consumer of a plain receive: copies each piece to its place in `dst`, unless it was read there. */
export function copyInto(dst: Uint8Array): Consume {
  return consumer(dst, undefined);
}

/** The consumer of a receive that combines each piece with its place (a recvReduce): `combine` does. */
export function combineInto(combine: (piece: Uint8Array, byteOffset: number) => void): Consume {
  return consumer(undefined, combine);
}

/**
 * Both kinds of consumer are one function literal with one shape: a transport's call of the
 * consumer then meets one kind of function whichever step posted it. With two, the call that
 * init's warm-up had compiled for one was thrown away at a job's first receive of the other
 * (docs/tuning.md, "Arrays of one kind").
 */
function consumer(
  into: Uint8Array | undefined,
  combine: ((piece: Uint8Array, byteOffset: number) => void) | undefined,
): Consume {
  const consume = (piece: Uint8Array, byteOffset: number) => {
    if (combine !== undefined) combine(piece, byteOffset);
    else if (piece.buffer !== into!.buffer || piece.byteOffset !== into!.byteOffset + byteOffset)
      into!.set(piece, byteOffset);
  };
  return Object.assign(consume, { into });
}

/** What a link recovered from, counted per peer (both directions as seen from this rank; TCP's resend). */
export interface RecoveryCounts {
  /** Frames from the peer that failed their checksum. */
  corrupted: number;
  /** Requests this rank sent for a frame again (a frame may be asked for more than once). */
  requested: number;
  /** Frames from the peer that came again intact. */
  recovered: number;
  /** Frames this rank sent the peer again, as the peer asked. */
  resent: number;
  /** Link frames (acknowledgements, requests) that failed their checksum, either way. */
  garbled: number;
  /** Sockets to the peer that broke and were re-established, the transfer going on where it stopped. */
  reconnects: number;
  /** Of those, re-established over another network path than their own (TSCCL_SOCKET_IFNAME with several interfaces). */
  failovers: number;
  /** Sockets moved back to their own path once it answered again, after a failover. */
  failbacks: number;
}

/** Counts of a link that recovered from nothing yet. */
export function noRecoveries(): RecoveryCounts {
  return { corrupted: 0, requested: 0, recovered: 0, resent: 0, garbled: 0, reconnects: 0, failovers: 0, failbacks: 0 };
}

export interface Transport {
  readonly rank: number;
  readonly nranks: number;
  send(peer: number, channel: number, data: Uint8Array, tag: MessageTag, ctx: WaitContext): Promise<SendHandle>;
  recv(
    peer: number,
    channel: number,
    bytes: number,
    elementBytes: number,
    tag: MessageTag,
    consume: Consume,
    ctx: WaitContext,
  ): Promise<void>;
  isDelivered(handle: SendHandle): boolean;
  waitDelivered(handle: SendHandle, ctx: WaitContext): Promise<void>;
  /**
   * Optional fast path for transports that can answer without waiting (shared memory): post now,
   * or undefined if the send would have to wait for queue space.
   */
  trySend?(peer: number, channel: number, data: Uint8Array, tag: MessageTag): SendHandle | undefined;
  /** Receive now, or false if the message is not there yet. Throws on a mismatch, as recv does. */
  tryRecv?(
    peer: number,
    channel: number,
    bytes: number,
    elementBytes: number,
    tag: MessageTag,
    consume: Consume,
  ): boolean;
  /** The low-latency protocol, where the transport has one. */
  readonly lowLatency?: LowLatencySlots;
  /**
   * Whether receives from different peers on one channel may wait at the same time (TCP: each
   * peer has its own sockets and inbox). The executor then posts a run of plain receives together,
   * so each frame streams into its place when it comes instead of waiting for its turn.
   */
  readonly concurrentRecvs?: boolean;
  /** What each peer's link recovered from so far, by peer rank (a transport that recovers nothing has none). */
  recoveries?(): RecoveryCounts[];
}

/**
 * A transport's low-latency protocol: each rank publishes once per collective, flag and data
 * together: the call's opcode and message size, and the message itself if it holds data; every
 * peer reads it (shared memory: in place, from the publisher's slot; TCP: from one copied
 * frame). The one-shot collectives (exec/one-shot.ts) run on it. Waits return undefined when they ended without an asynchronous
 * wait, so a call whose peers keep up never awaits.
 */
export interface LowLatencySlots {
  /** Largest message one publish can carry, in bytes. */
  readonly capacity: number;
  /**
   * Whether a publication no peer reads leaves nothing behind (a slot the next call overwrites,
   * not a queued frame), so a one-shot call's plan may await fewer ranks (OneShotPlan.eagerAwaits).
   */
  readonly eagerRoot?: boolean;
  /**
   * Publishes collective `seq` (a message of `bytes`; `data` if this rank holds it), once no peer
   * still reads the slot it reuses.
   */
  publish(
    seq: number,
    opcode: number,
    bytes: number,
    data: Uint8Array | undefined,
    ctx: WaitContext,
  ): Promise<void> | undefined;
  /** Waits until `peer` has published for collective `seq`. */
  arrived(peer: number, seq: number, ctx: WaitContext): Promise<void> | undefined;
  /**
   * What `peer` published for `seq` (after arrived), read in place or copied out; throws
   * TSCCL_ERR_MISMATCH unless it published `opcode` with a message of `bytes`. Repeated calls of
   * one size may get the same view object back, valid until the next read of that peer.
   */
  read(peer: number, seq: number, opcode: number, bytes: number): Uint8Array;
  /**
   * Where peers read this rank's memory (thread ranks): whether `data` lies where every peer can
   * read it in place, so that publishByReference may carry it.
   */
  readsInPlace?(data: Uint8Array): boolean;
  /**
   * Publishes collective `seq` by reference: peers read `data` where it lies, so it must stay
   * unchanged until every peer has released `seq` (see released).
   */
  publishByReference?(seq: number, opcode: number, data: Uint8Array, ctx: WaitContext): Promise<void> | undefined;
  /** This rank has read everything it reads of collective `seq` (owed only where a peer published by reference). */
  release?(seq: number): void;
  /** Waits until every peer has released collective `seq`. */
  released?(seq: number, ctx: WaitContext): Promise<void> | undefined;
  /**
   * Whether this rank read a peer's own memory in place for collective `seq` (a message published
   * by reference), which a peer that gives up may take back (OpContext.endReads); absent where
   * the transport cannot tell, which counts as yes.
   */
  readPeerMemory?(seq: number): boolean;
}

/**
 * The operation a message belongs to, as its number on the wire (TCP frame headers,
 * shared-memory descriptors and low-latency slots). Fixed: a new operation takes a new number,
 * and `test/errors-wire.test.ts` pins these.
 */
export const OPCODES = {
  allReduce: 0,
  broadcast: 1,
  reduce: 2,
  allGather: 3,
  reduceScatter: 4,
  allToAll: 5,
  gather: 6,
  scatter: 7,
  barrier: 8,
  send: 9,
  check: 10,
  /** Both phases of a compressed collective (its bytes, not the caller's): a peer that called it uncompressed is named. */
  compressed: 11,
} as const;

export type OpcodeName = keyof typeof OPCODES;

const OPCODE_NAMES = new Map<number, OpcodeName>(Object.entries(OPCODES).map(([name, n]) => [n, name as OpcodeName]));

export function opcodeOf(name: OpcodeName): number {
  return OPCODES[name];
}

export function opcodeName(code: number): string {
  return OPCODE_NAMES.get(code) ?? `op#${code}`;
}

/** One side of a message match: which operation, which call, how many bytes. */
export interface MessageLabel {
  readonly opcode: number;
  readonly seq: number;
  readonly bytes: number;
}

/**
 * The error for a message that is not the one a rank expected, naming both sides. `how`
 * qualifies what was sent (' on another communicator', ' by another algorithm').
 */
export function messageMismatch(
  rank: number,
  peer: number,
  expected: MessageLabel,
  sent: MessageLabel,
  how = '',
): TscclError {
  return new TscclError(
    ErrorCode.MISMATCH,
    `Rank ${rank} expected ${opcodeName(expected.opcode)} #${expected.seq} of ${expected.bytes} bytes from rank ${peer}, ` +
      `but rank ${peer} sent ${opcodeName(sent.opcode)} #${sent.seq} of ${sent.bytes} bytes${how}: the ranks called different operations or counts`,
    { rank, peer, seq: expected.seq, op: opcodeName(expected.opcode) },
  );
}
