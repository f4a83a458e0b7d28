import { performance } from 'node:perf_hooks';
import type { Socket } from 'node:net';
import { anyValueArray } from '../../any-value-array.js';
import type { ErrorCodeValue, TscclError } from '../../errors.js';
import { log } from '../../log.js';
import { QUEUED_CHANNELS } from '../channels.js';
import type { Consume, MessageTag } from '../transport.js';
import { type Frame, type FrameHeader, HEADER_BYTES } from './frame.js';
import type { Intake } from './intake.js';
import { type RecoveryCounts, noRecoveries } from '../transport.js';
import { unwritten, writeNow, writeStartNow } from './direct-write.js';
import { LaneArrivals } from './lane-arrivals.js';
import { RetainedFrames } from './retained-frames.js';

const EMPTY = new Uint8Array(0);

/** A socket and where its bytes go. */
export interface Connection {
  readonly socket: Socket;
  readonly intake: Intake;
}

/**
 * Where a link stands. It only moves forward (in this order), so no state is entered twice:
 *   Open -> Leaving (the peer said goodbye)       Open -> Broken (connection lost, silent, bad frame)
 *   Leaving -> Left (the link went down after)    Broken -> Left (a goodbye read after the break)
 */
export const LinkState = {
  /** Frames flow both ways. */
  Open: 0,
  /** The peer destroyed its communicator and said goodbye; frames it sent before still arrive. */
  Leaving: 1,
  /** Down without a goodbye: as far as this rank can tell, the peer is dead. */
  Broken: 2,
  /** Down after a goodbye: a failure only for a call that still needs the peer's data. */
  Left: 3,
} as const;
export type LinkState = (typeof LinkState)[keyof typeof LinkState];

/** A receive waiting while its inbox is empty: the next frame of its channel streams straight into it. */
export interface WaitingRecv {
  readonly bytes: number;
  readonly elementBytes: number;
  readonly tag: MessageTag;
  readonly consume: Consume;
  /** Set once the frame has fully arrived (or failed). */
  done: boolean;
  error: TscclError | undefined;
  /** Set when the receiver gave up; later bytes of its frame are dropped. */
  cancelled: boolean;
}

/** A place in a channel's order for a message still being assembled (or buffered behind one). */
export interface Slot {
  frame: Frame | undefined;
}

/** A striped message's parts, by lane. */
export interface Assembly {
  readonly parts: (Buffer | undefined)[];
  header: FrameHeader | undefined;
  slot: Slot | undefined;
}

/** A peer's announcement that it gave up on the communicator. */
export interface PeerFailure {
  readonly code: ErrorCodeValue;
  readonly seq: number;
  /** Whose failure started it. */
  readonly origin: number;
  /** The last collective the peer had ended successfully before. */
  readonly ended: number;
}

/**
 * Everything one rank knows about one peer: its sockets, the receive state of each channel, the
 * send tickets, and the link's state. Fields are plain and public: the transport's parts (send
 * path, receive dispatch, striping, control channel) work on them directly, on hot paths.
 */
export class PeerLink {
  readonly peer: number;
  /**
   * The sockets to the peer, lane by lane (none to oneself), each with where its bytes go: this
   * rank writes its frames and reads the peer's on the same ones. Socket 0 carries every
   * unstriped frame. A reconnected socket takes its lane's place.
   */
  readonly connections: Connection[];
  /** The peer runs on this rank's machine (same kernel boot), whatever its network namespace. */
  readonly sameMachine: boolean;
  state: LinkState = LinkState.Open;
  /** Why the link is down (set exactly when the state is Broken or Left): every later call on it throws this. */
  error: TscclError | undefined = undefined;
  /** The peer's announcement that it gave up, if it made one (the link may still be open). */
  failure: PeerFailure | undefined = undefined;
  /** Highest collective seq heard from this peer. */
  lastSeq = 0;
  /** When any byte last arrived from the peer (performance.now()), as of the last refreshHeard. */
  lastHeard = performance.now();
  /** When any byte last arrived on each socket from the peer, as of the last refreshHeard. */
  readonly laneHeard: number[];
  /**
   * Reads from each socket: counted by every read, turned into times by refreshHeard, as a clock
   * read per read was a measurable part of a small call.
   */
  readonly laneReads: number[];
  private readonly laneReadsSeen: number[];
  /** Send tickets handed out, and the highest one whose bytes the sockets have taken (all before it too). */
  posted = 0;
  written = 0;
  /** Send tickets whose writes finished out of order (striped sends complete lane by lane). */
  readonly finishedTickets = new Set<number>();
  /** Waits to end when anything happens on the link (an array: a Set's growing and shrinking cost more per call). */
  readonly wakers = anyValueArray<() => void>();
  /** Whole messages by channel, waiting for their receive. */
  readonly inbox = new Map<number, Frame[]>();
  /** By channel, a recv waiting while its inbox is empty: the next frame streams straight into it. */
  readonly waiting = anyValueArray<WaitingRecv | undefined>(QUEUED_CHANNELS);
  /** Per channel, messages seen on socket 0 still waiting for their other stripes, in order. */
  readonly ordered = new Map<number, Slot[]>();
  /** Per channel, how many stripe parts each socket has carried: part j of a socket is message j's. */
  readonly stripeCounts = new Map<number, number[]>();
  /** Per channel, striped messages being assembled, by their stripe number. */
  readonly assemblies = new Map<number, Map<number, Assembly>>();
  /** Sockets holding a frame back until its receiver is posted: each resumes (or gives up waiting) when called. */
  readonly held = new Set<(giveUp: boolean) => void>();
  /** The frames written on each socket to the peer, and the checksummed ones it may ask for again (resend.ts). */
  readonly retained: RetainedFrames;
  /** Per socket from the peer: frames that failed their checksum and will come again, and the acknowledgements. */
  readonly arrivals: readonly LaneArrivals[];
  /** An acknowledgement to the peer is due (written after the read that made it due). */
  acksDue = false;
  readonly recovery: RecoveryCounts = noRecoveries();
  /**
   * Broken sockets may be re-established (reconnect.ts): control and link frames are kept too
   * (those that only matter at once as a stand-in), so a new socket can carry every frame from
   * where the old one broke, numbered alike; a write that failed waits to be made again there.
   */
  readonly reconnects: boolean;
  /** A heartbeat's header: what a stale frame is carried again as. */
  private readonly standIn: Uint8Array | undefined;
  /** Per socket, the callbacks of writes that failed with it, by frame number: called once written again. */
  readonly unwritten: Map<number, (err?: Error | null) => void>[];

  constructor(
    peer: number,
    where: {
      /** One per lane, read and written by both ranks (mesh.ts). */
      connections: readonly Connection[];
      sameMachine: boolean;
      resendWindowBytes: number;
      /** Set where broken sockets may be re-established: a heartbeat frame's header. */
      standIn?: Uint8Array;
    },
  ) {
    this.peer = peer;
    this.connections = [...where.connections];
    this.sameMachine = where.sameMachine;
    this.retained = new RetainedFrames(peer, this.connections.length, where.resendWindowBytes);
    this.arrivals = this.connections.map(() => new LaneArrivals());
    this.laneHeard = this.connections.map(() => performance.now());
    this.laneReads = this.connections.map(() => 0);
    this.laneReadsSeen = this.connections.map(() => 0);
    this.standIn = where.standIn;
    this.reconnects = where.standIn !== undefined;
    this.unwritten = this.connections.map(() => new Map());
  }

  /**
   * Brings lastHeard and laneHeard up to `now` for the sockets read since the last refresh: they
   * say when bytes last came, to within the time between two refreshes (the callers check
   * silences of seconds, several times each).
   */
  refreshHeard(now: number): void {
    for (let lane = 0; lane < this.laneReads.length; lane++) {
      if (this.laneReads[lane] === this.laneReadsSeen[lane]) continue;
      this.laneReadsSeen[lane] = this.laneReads[lane];
      this.laneHeard[lane] = now;
      this.lastHeard = now;
    }
  }

  /** The peer said goodbye: it closed on purpose. */
  get saidGoodbye(): boolean {
    return this.state === LinkState.Leaving || this.state === LinkState.Left;
  }

  /**
   * A frame from the peer failed its checksum and is to come again: no frame is held in its
   * socket meanwhile (hold.ts), as what comes again comes on socket 0.
   */
  get awaitingResend(): boolean {
    return this.arrivals.some((lane) => lane.pending.size > 0);
  }

  /**
   * Writes one frame on socket `lane`, its pieces in one burst (`written` after the last, called
   * before this returns when the kernel took the frame at once, see direct-write.ts), and returns
   * its number there. `transient`: the pieces' memory is reused once this returns, so whatever is
   * not written at once is copied. Every frame written goes through here (or is counted by
   * retained.next, where a test hook writes it), so both ends number a socket's frames alike.
   */
  writeFrame(
    lane: number,
    frame: readonly Uint8Array[],
    written?: (err?: Error | null) => void,
    transient = false,
  ): number {
    const socket = this.connections[lane].socket;
    const number = this.retained.next(lane);
    const done = written !== undefined && this.reconnects ? this.rewritable(lane, number, written) : written;
    let total = 0;
    for (let i = 0; i < frame.length; i++) total += frame[i].byteLength;
    const now = writeNow(socket, frame, total);
    if (now === total) {
      done?.();
      return number;
    }
    const pieces = now > 0 || transient ? unwritten(frame, now, transient) : frame;
    if (pieces.length === 1) {
      socket.write(pieces[0], done);
      return number;
    }
    socket.cork();
    for (let i = 0; i < pieces.length; i++) socket.write(pieces[i], i === pieces.length - 1 ? done : undefined);
    socket.uncork();
    return number;
  }

  /**
   * writeFrame of one frame encoded at the start of `memory` (`length` bytes), memory that is
   * reused once this returns: what the kernel does not take at once is copied. Makes no view of
   * the frame where it is taken whole, as on a small call's path.
   */
  writeCopied(lane: number, memory: Uint8Array, length: number): number {
    const socket = this.connections[lane].socket;
    const number = this.retained.next(lane);
    const now = writeStartNow(socket, memory, length);
    if (now < length) socket.write(Buffer.from(memory.subarray(now, length)));
    return number;
  }

  /**
   * Writes a control or link frame (whole, header and payload) on socket `lane`. Where sockets may be
   * re-established it is kept: as itself, or (`stale`: it matters only now, and what it said is
   * said again after a reconnection) as a stand-in heartbeat.
   */
  writeControl(pieces: readonly Uint8Array[], stale: boolean, lane = 0): void {
    const number = this.writeFrame(lane, pieces);
    if (!this.reconnects) return;
    const frame = stale || pieces.length === 1 ? pieces[0] : Buffer.concat(pieces);
    this.retained.keep(
      lane,
      stale
        ? { number, header: this.standIn!, payload: EMPTY, checksum: undefined, control: true }
        : {
            number,
            header: frame.subarray(0, HEADER_BYTES),
            payload: frame.subarray(HEADER_BYTES),
            checksum: undefined,
            control: true,
          },
    );
  }

  /** A write's callback that, if the write fails with its socket, waits for the frame to be written again on the next one. */
  private rewritable(lane: number, number: number, written: (err?: Error | null) => void) {
    return (err?: Error | null) => {
      if (err && this.error === undefined) this.unwritten[lane].set(number, written);
      else written(err);
    };
  }

  /** Down without a goodbye, for the reason `error` gives. */
  get broken(): boolean {
    return this.state === LinkState.Broken;
  }

  /** The peer's goodbye arrived. */
  goodbye(): void {
    if (this.state === LinkState.Open) this.state = LinkState.Leaving;
    else if (this.state === LinkState.Broken) this.state = LinkState.Left;
  }

  /** The link is down for `err` (the first reason stays); every wait on it ends. */
  lose(err: TscclError): void {
    this.down(err);
    // A peer that destroyed its communicator closes too; a call that needed it reports the error.
    log('INFO', () => err.message);
    this.wake();
  }

  /** Moves to Broken (Left after a goodbye), unless already down. */
  down(err: TscclError): void {
    if (this.error !== undefined) return;
    this.error = err;
    this.state = this.state === LinkState.Leaving ? LinkState.Left : LinkState.Broken;
  }

  /** Collective `seq` was heard of from the peer (seqs wrap: compared as int32 differences). */
  heardSeq(seq: number): void {
    if (((seq - this.lastSeq) | 0) > 0) this.lastSeq = seq;
  }

  /** Marks a send's bytes as taken by the sockets; tickets complete in order. */
  finish(ticket: number): void {
    if (ticket === this.written + 1 && this.finishedTickets.size === 0) {
      this.written = ticket;
      return;
    }
    this.finishedTickets.add(ticket);
    while (this.finishedTickets.has(this.written + 1)) this.finishedTickets.delete(++this.written);
  }

  /** Ends every wait on the link, so each re-checks what it waits for. */
  wake(): void {
    if (this.wakers.length > 0) for (const wake of this.wakers.slice()) wake();
  }

  /** Whether a whole message waits on `channel`. */
  hasMessage(channel: number): boolean {
    return (this.inbox.get(channel)?.length ?? 0) > 0;
  }

  /** Lets every frame held back in the peer's sockets go on (see hold.ts). */
  releaseHeld(giveUp: boolean): void {
    if (this.held.size > 0) for (const resume of [...this.held]) resume(giveUp);
  }
}
