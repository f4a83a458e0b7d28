import type { FlightRecorder, LiveRecord } from '../debug/flight-recorder.js';
import { type TypedArray, inferDType } from '../dtypes/dtype.js';
import { TscclError } from '../errors.js';
import type { Arena } from '../memory/arena.js';
import { P2P_CHANNEL } from '../transport/channels.js';
import { copyInto, opcodeOf } from '../transport/transport.js';
import type { CommBackend } from './backend.js';
import { checksumDefault } from './call-defaults.js';
import { type CallOptions, checkOptions } from './call-options.js';
import type { FailurePolicy } from './failure-policy.js';
import { type CommScope, OpContext } from './op-context.js';
import { checkRank, checkTypedArray } from './validate.js';
import { epochMs } from '../debug/epoch-clock.js';

/** One send or receive, checked and numbered. */
interface Message {
  readonly kind: 'send' | 'recv';
  readonly data: TypedArray;
  readonly peer: number;
  /** This direction's counter with the peer: matches the peer's n-th recv to this rank's n-th send. */
  readonly seq: number;
  readonly timeoutMs: number;
  readonly signal: AbortSignal | undefined;
  readonly checksum: boolean | undefined;
  readonly record: LiveRecord;
}

/** The communicator's parts that sends and receives use. */
interface PointToPointSite {
  readonly rank: number;
  readonly size: number;
  readonly arena: Arena;
  readonly backend: CommBackend;
  readonly scope: CommScope;
  readonly failures: FailurePolicy;
  readonly defaultTimeoutMs: number;
  /** The communicator's flight recorder: sends and receives are recorded beside its collectives. */
  readonly recorder: FlightRecorder;
}

/**
 * Sends and receives of one communicator: ordered per peer and direction, independent of the
 * collectives and of other peers.
 */
export class PointToPoint {
  private readonly chains = new Map<string, Promise<unknown>>();
  /** Sends and receives started and not yet ended. */
  private inFlight = 0;
  private readonly sent: number[];
  private readonly received: number[];
  private readonly where: { rank: number; defaultTimeoutMs: number };

  private readonly comm: PointToPointSite;

  constructor(comm: PointToPointSite) {
    this.comm = comm;
    this.sent = new Array<number>(comm.size).fill(0);
    this.received = new Array<number>(comm.size).fill(0);
    this.where = { rank: comm.rank, defaultTimeoutMs: comm.defaultTimeoutMs };
  }

  /** Checks the arguments now, then queues the message behind earlier ones to or from the same peer. */
  start(kind: 'send' | 'recv', buffer: TypedArray, peer: number, options: CallOptions): Promise<void> {
    const { rank, size } = this.comm;
    try {
      this.comm.failures.ensureUsable();
      const call = checkOptions(kind, options, this.where);
      const data = checkTypedArray(buffer, 'buffer', rank);
      checkRank(peer, size, 'peer', rank);
      const counters = kind === 'send' ? this.sent : this.received;
      const seq = ++counters[peer];
      const key = `${kind}${peer}`;
      const message: Message = {
        kind,
        data,
        peer,
        seq,
        timeoutMs: call.timeoutMs,
        signal: call.signal,
        checksum: call.checksum ?? checksumDefault,
        record: this.comm.recorder.record({
          seq,
          op: kind,
          peer,
          dtype: data instanceof Uint16Array ? '16-bit' : inferDType(data, 'buffer'),
          count: data.length,
          root: -1,
          redop: 'none',
        }),
      };
      this.inFlight++;
      const run = (this.chains.get(key) ?? Promise.resolve())
        .then(() => this.run(message))
        .finally(() => {
          this.inFlight--;
        });
      this.chains.set(
        key,
        run.catch(() => undefined),
      );
      return run;
    } catch (err) {
      return Promise.reject(err);
    }
  }

  /** Whether a send or receive has started and not ended. */
  get busy(): boolean {
    return this.inFlight > 0;
  }

  /** Settles once every message queued so far has. */
  drained(): Promise<unknown> {
    return Promise.allSettled(this.chains.values());
  }

  private async run(message: Message): Promise<void> {
    const { record } = message;
    record.state = 'running';
    record.startedAt = epochMs();
    try {
      await this.transfer(message);
    } catch (err) {
      ended(record, err);
      throw err;
    }
    ended(record, undefined);
  }

  private async transfer(message: Message): Promise<void> {
    const { kind, data, peer, seq } = message;
    const { arena, backend, failures } = this.comm;
    failures.ensureUsable();
    const ctx = new OpContext(this.comm.scope, {
      op: kind,
      seq,
      timeoutMs: message.timeoutMs,
      signal: message.signal,
      collective: false,
      participants: [peer],
    });
    const tag = { seq, opcode: opcodeOf('send'), checksum: message.checksum };
    const bytes = new Uint8Array(data.buffer, data.byteOffset, data.byteLength);
    try {
      if (kind === 'recv') {
        // Checked before the transport hands the sender's memory back (shared memory does right
        // after): a sender may give up once its send was delivered, and that endangers nothing.
        const copy = copyInto(bytes);
        const consume = Object.assign(
          (piece: Uint8Array, byteOffset: number) => {
            copy(piece, byteOffset);
            ctx.endReads();
          },
          { into: bytes },
        );
        await backend.transport.recv(peer, P2P_CHANNEL, bytes.byteLength, 1, tag, consume, ctx);
        return;
      }
      let source = bytes;
      let staged: number | undefined;
      if (!arena.contains(data)) {
        staged = arena.allocate(bytes.byteLength);
        source = arena.bytes(staged, bytes.byteLength);
        source.set(bytes);
      }
      const handle = await backend.transport.send(peer, P2P_CHANNEL, source, tag, ctx);
      await backend.transport.waitDelivered(handle, ctx);
      // Only once delivered: after a failed send the peer may still read the staged copy in place,
      // so it stays, as a failed communicator's staging space does.
      if (staged !== undefined) arena.free(staged);
    } catch (err) {
      // Closed before the failure policy dumps the flight records, so the dump says it failed.
      ended(message.record, err);
      throw failures.fail(err, seq);
    }
  }
}

/** Closes a send's or receive's record, once: done, or failed with the error's code. */
function ended(record: LiveRecord, err: unknown): void {
  if (!Number.isNaN(record.endedAt)) return;
  record.endedAt = epochMs();
  record.state = err === undefined ? 'done' : 'failed';
  if (err !== undefined) record.error = err instanceof TscclError ? err.code : String(err);
}
