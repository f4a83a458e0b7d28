import { buildSchedule } from '../algorithms/registry.js';
import { type CallShape, type Collective, REDUCING_COLLECTIVES, type Schedule, bufferCounts, inPlaceExtent, inPlaceLayout } from '../algorithms/schedule.js';
import { type DType, type DTypeArrayMap, type DTypeInfo, type TypedArray, dtypeInfo } from '../dtypes/dtype.js';
import { ErrorCode, TscclError, invalidArgument } from '../errors.js';
import { executeSchedule } from '../exec/executor.js';
import { OneShotCall, oneShotOffer } from '../exec/one-shot.js';
import { type ReduceKernel, reduceKernel, scaleKernel } from '../kernels/reduce-kernel.js';
import { arenaKernels } from '../kernels/simd-kernels.js';
import { type ReduceOp, checkOpForType, parseReduceOp } from '../kernels/reduce-op.js';
import type { Arena } from '../memory/arena.js';
import { localMachine } from '../sim/machine-cost.js';
import { type Prediction, predictCall } from '../tuner/predict.js';
import { type Selection, parseAlgorithmOverrides, prepareChoices, selectAlgorithm } from '../tuner/select.js';
import { P2P_CHANNEL } from '../transport/channels.js';
import { childName } from './comm-name.js';
import { copyInto, opcodeOf } from '../transport/transport.js';
import { log } from '../log.js';
import { type CommScope, OpContext } from './op-context.js';
import type { CommBackend } from './backend.js';
import { type CommRecord, type OpRecord, FlightRecorder, dumpFlightRecords, installSignalDump } from '../debug/flight-recorder.js';
import { checkFingerprints, fingerprintOf } from './desync-check.js';
import { paramString } from '../config/params.js';
import {
  type CallOptions, allocatedDTypes, checkCallOptions, checkCounts, checkLength, checkRank, checkSameType, checkTypedArray, resolveDType,
} from './validate.js';

export type { CallOptions } from './validate.js';

export interface ReduceOptions extends CallOptions {
  /** Reduction operation (default 'sum'). */
  op?: ReduceOp;
  /** Result buffer; omit for in place. */
  output?: TypedArray;
  /** Needed for Uint16Array data ('float16' or 'bfloat16') unless the array came from comm.alloc. */
  dtype?: DType;
  /** Force an algorithm (as TSCCL_ALGO does); the tuner's choice otherwise. */
  algorithm?: string;
}

export interface RootedOptions extends ReduceOptions {
  root?: number;
}

export interface AllToAllOptions extends CallOptions {
  output?: TypedArray;
  dtype?: DType;
  algorithm?: string;
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

/** A call after argument checks: what to run and on which memory. */
interface CallPlan {
  readonly collective: Collective;
  readonly label: string;
  readonly dtype: DTypeInfo;
  readonly op: ReduceOp;
  readonly shape: CallShape;
  readonly input: TypedArray | undefined;
  readonly output: TypedArray | undefined;
  readonly algorithm: string | undefined;
}

/** The last plan and the arguments it was made from: a call with the same ones reuses it. */
interface PlanMemo {
  readonly plan: CallPlan;
  readonly opName: unknown;
  readonly output: TypedArray | undefined;
  readonly inputLength: number;
  readonly outputLength: number | undefined;
}

/** What a plan runs with on this rank, decided once per plan (and the checksum choice). */
interface PreparedCall {
  readonly plan: CallPlan;
  readonly checksum: boolean | undefined;
  /** The call's size as the tuner sized it: the root's input bytes. */
  readonly bytes: number;
  readonly selection: Selection;
  readonly kernel: ReduceKernel;
  readonly opcode: number;
  /** Divides the output by the rank count (avg) on ranks that hold a result. */
  readonly scale: boolean;
  /** The one-shot run, where the tuner chose it. */
  readonly oneShot: OneShotCall | undefined;
  /** This rank's schedule otherwise: built once per prepared call, not looked up per call. */
  readonly schedule: Schedule | undefined;
}

/** The shape fields of calls with equal blocks: none (the default of plan(), and what its memo requires). */
const EQUAL_BLOCKS: Partial<CallShape> = Object.freeze({});

const algorithmOverrides = parseAlgorithmOverrides(process.env.TSCCL_ALGO);
const debugCheck = paramString('TSCCL_DEBUG_CHECK') === '1';
/** TSCCL_CHECKSUM=1 or 0 decides for every transport; unset leaves each its default (TCP to other machines on, else off). */
const checksumDefault = paramString('TSCCL_CHECKSUM') === '' ? undefined : paramString('TSCCL_CHECKSUM') === '1';
const EMPTY = new Uint8Array(0);
/** The promise of every call that finished before returning: settled, shared, never rejected. */
const DONE: Promise<void> = Promise.resolve();

/**
 * A group of ranks that run collectives together. Calls on one communicator run one after
 * another in call order, as on an NCCL stream; calls on different communicators run
 * concurrently. Every call returns a Promise and takes { timeoutMs, signal }.
 */
export class Communicator {
  readonly rank: number;
  readonly size: number;
  /** A readable name, e.g. "world" or "world.split0.color1". */
  readonly name: string;
  private readonly arena: Arena;
  private readonly backend: CommBackend;
  private readonly defaultTimeoutMs: number;
  private seq = 0;
  private splits = 0;
  private chain: Promise<unknown> = Promise.resolve();
  /** Collective calls queued or running on this communicator. */
  private inFlight = 0;
  private readonly p2pChains = new Map<string, Promise<unknown>>();
  private readonly p2pSent: number[];
  private readonly p2pReceived: number[];
  private readonly workspaces = new Map<string, { offset: number; bytes: number }>();
  private failure: TscclError | undefined;
  private destroyed = false;
  private shrinks = 0;
  private readonly recorder: FlightRecorder;
  /** 0..size-1, the participants of every collective (built once, not per call). */
  private readonly allRanks: readonly number[];
  /**
   * The last call's plan and preparation, reused while calls repeat it (same buffers, lengths,
   * size, op, algorithm): a stream of small calls then checks, selects and builds views once.
   */
  private lastPlan: PlanMemo | undefined;
  private lastPrepared: PreparedCall | undefined;
  /** What every call's wait context shares. */
  private readonly scope: CommScope;

  constructor(options: { arena: Arena; backend: CommBackend; name: string; defaultTimeoutMs: number }) {
    this.arena = options.arena;
    this.backend = options.backend;
    this.rank = options.backend.transport.rank;
    this.size = options.backend.transport.nranks;
    this.name = options.name;
    this.defaultTimeoutMs = options.defaultTimeoutMs;
    this.p2pSent = new Array<number>(this.size).fill(0);
    this.p2pReceived = new Array<number>(this.size).fill(0);
    this.recorder = new FlightRecorder(this.name, this.rank, this.size);
    this.allRanks = Array.from({ length: this.size }, (_, r) => r);
    this.scope = {
      rank: this.rank, commName: this.name, status: this.backend.status, spinMs: this.backend.spinMs, spinYields: this.backend.spinYields,
      lostRank: (seq) => this.backend.lostRank(seq), localAbort: () => this.failure,
    };
    // Thread ranks rank the tuner's small size classes now, so that no small call runs the cost model.
    if (this.backend.kind === 'shm') prepareChoices(localMachine(this.size, 'shm').graph, { nranks: this.size, transport: 'shm', oversubscribed: this.backend.oversubscribed, oneShot: this.backend.transport.lowLatency !== undefined });
    installSignalDump();
  }

  /** 'shm' for thread ranks of one process, 'tcp' for ranks in separate processes. */
  get transportKind(): 'shm' | 'tcp' {
    return this.backend.kind;
  }

  /**
   * This rank's flight record of the communicator: its last TSCCL_FLIGHT_RECORDER_ENTRIES
   * operations, oldest first, each with the algorithm that ran it, its state and times (what
   * a timeout or abort writes to TSCCL_TRACE_DIR). A copy; does not communicate.
   */
  flightRecords(): CommRecord {
    return this.recorder.snapshot();
  }

  /**
   * What a call of `bytes` (the root's input, as the tuner sizes a call: a broadcast's message
   * on every rank) would cost on this machine and which algorithm the tuner would run for it:
   * the tuner's choice, simulated on the local topology from the `tsccl tune` profile (defaults
   * when none). Does not communicate.
   */
  predict(collective: string, bytes: number, options: { dtype?: DType; algorithm?: string } = {}): Prediction {
    const hosts = this.backend.hosts;
    const algorithm = options.algorithm ?? algorithmOverrides.get(collective as Collective);
    const slots = this.backend.transport.lowLatency;
    return predictCall({
      collective, bytes, nranks: this.size, elementBytes: dtypeInfo(options.dtype ?? 'float32').bytes, transport: this.backend.kind,
      hostCount: hosts === undefined ? 1 : Math.max(...hosts) + 1, ...(algorithm === undefined ? {} : { algorithm }),
      ...(slots === undefined || debugCheck ? {} : { oneShotCapacity: slots.capacity }),
    });
  }

  /**
   * A typed array of `count` elements in the shared arena (registered memory): collectives on it
   * need no staging copy, and peers read it in place. Its memory returns on `free`, or when the
   * array is garbage collected, which may come late: the collector does not see the arena fill.
   */
  alloc<D extends DType>(dtype: D, count: number): DTypeArrayMap[D] {
    const info = dtypeInfo(dtype);
    if (!Number.isInteger(count) || count < 0) {
      throw invalidArgument(`Rank ${this.rank}: alloc count must be a non-negative integer, got ${count}`, { rank: this.rank, argument: 'count' });
    }
    const array = this.arena.allocateOwned(info.ctor as never, count, info.bytes) as TypedArray;
    allocatedDTypes.set(array, info);
    return array as DTypeArrayMap[D];
  }

  /**
   * Returns an array from `alloc` to the arena now, as ncclMemFree does; call it once every call
   * that uses the array has resolved, and do not use the array after.
   */
  free(buffer: TypedArray): void {
    checkTypedArray(buffer, 'buffer', this.rank);
    if (!this.arena.release(buffer)) {
      throw invalidArgument(`Rank ${this.rank}: free takes an array from alloc that was not freed yet; this one ${this.arena.contains(buffer) ? 'was freed already or is a view into one' : 'is not in the arena'}`,
        { rank: this.rank, argument: 'buffer' });
    }
  }

  /** Reduces `buffer` across ranks; the result lands in options.output, or in `buffer` itself. */
  allReduce(buffer: TypedArray, options: ReduceOptions = {}): Promise<void> {
    return this.start(() => {
      const { input, dtype } = this.typed(buffer, options.dtype);
      return this.plan('allReduce', dtype, options.op, input.length, 0, input, options.output, options.algorithm);
    }, options);
  }

  /** Copies root's `buffer` to every rank's options.output (or `buffer`). */
  broadcast(buffer: TypedArray, options: RootedOptions = {}): Promise<void> {
    return this.start(() => {
      const { input, dtype } = this.typed(buffer, options.dtype);
      const root = checkRank(options.root ?? 0, this.size, 'root', this.rank);
      const count = options.output !== undefined ? checkTypedArray(options.output, 'output', this.rank).length : input.length;
      return this.plan('broadcast', dtype, 'sum', count, root, input, options.output, options.algorithm);
    }, options);
  }

  /** Reduces every rank's `buffer` into root's options.output (or root's `buffer`). */
  reduce(buffer: TypedArray, options: RootedOptions = {}): Promise<void> {
    return this.start(() => {
      const { input, dtype } = this.typed(buffer, options.dtype);
      const root = checkRank(options.root ?? 0, this.size, 'root', this.rank);
      return this.plan('reduce', dtype, options.op, input.length, root, input, options.output, options.algorithm);
    }, options);
  }

  /**
   * Every rank's `buffer` into every rank's options.output, in rank order. In place (no output),
   * `buffer` holds size * count elements and this rank's block is at rank * count.
   */
  allGather(buffer: TypedArray, options: ReduceOptions = {}): Promise<void> {
    return this.start(() => {
      const { input, dtype } = this.typed(buffer, options.dtype);
      const count = options.output === undefined ? this.blockCount(input, 'allGather') : input.length;
      return this.plan('allGather', dtype, 'sum', count, 0, input, options.output, options.algorithm);
    }, options);
  }

  /**
   * Reduces `buffer` (size blocks) and leaves block r on rank r, in options.output or, in place,
   * at buffer[rank * count ...].
   */
  reduceScatter(buffer: TypedArray, options: ReduceOptions = {}): Promise<void> {
    return this.start(() => {
      const { input, dtype } = this.typed(buffer, options.dtype);
      return this.plan('reduceScatter', dtype, options.op, this.blockCount(input, 'reduceScatter'), 0, input, options.output, options.algorithm);
    }, options);
  }

  /** Block p of `buffer` goes to rank p; equal blocks, or the counts and displacements given. */
  allToAll(buffer: TypedArray, options: AllToAllOptions = {}): Promise<void> {
    return this.start(() => {
      const { input, dtype } = this.typed(buffer, options.dtype);
      const variable = options.sendCounts !== undefined || options.recvCounts !== undefined;
      if (!variable) return this.plan('allToAll', dtype, 'sum', this.blockCount(input, 'allToAll'), 0, input, options.output, options.algorithm);
      if (options.output === undefined) {
        throw invalidArgument(`Rank ${this.rank}: allToAll with sendCounts/recvCounts needs an output buffer (in place works with equal blocks only)`, { rank: this.rank, argument: 'output' });
      }
      const sendCounts = checkCounts(options.sendCounts, this.size, 'sendCounts', this.rank);
      const recvCounts = checkCounts(options.recvCounts, this.size, 'recvCounts', this.rank);
      const packed = (counts: number[]) => counts.map((_, i) => counts.slice(0, i).reduce((a, b) => a + b, 0));
      const sendDispls = options.sendDispls === undefined ? packed(sendCounts) : checkCounts(options.sendDispls, this.size, 'sendDispls', this.rank);
      const recvDispls = options.recvDispls === undefined ? packed(recvCounts) : checkCounts(options.recvDispls, this.size, 'recvDispls', this.rank);
      if (sendCounts[this.rank] !== recvCounts[this.rank]) {
        throw invalidArgument(`Rank ${this.rank}: sendCounts[${this.rank}] = ${sendCounts[this.rank]} must equal recvCounts[${this.rank}] = ${recvCounts[this.rank]} (the block a rank sends itself)`, { rank: this.rank, argument: 'recvCounts' });
      }
      return this.plan('allToAll', dtype, 'sum', 0, 0, input, options.output, options.algorithm, { sendCounts, recvCounts, sendDispls, recvDispls });
    }, options);
  }

  /** Every rank's `buffer` into root's options.output, in rank order (in place at root: buffer holds all blocks). */
  gather(buffer: TypedArray, options: RootedOptions = {}): Promise<void> {
    return this.start(() => {
      const { input, dtype } = this.typed(buffer, options.dtype);
      const root = checkRank(options.root ?? 0, this.size, 'root', this.rank);
      const inPlaceRoot = this.rank === root && options.output === undefined;
      const count = inPlaceRoot ? this.blockCount(input, 'gather') : input.length;
      return this.plan('gather', dtype, 'sum', count, root, input, this.rank === root ? options.output : input, options.algorithm);
    }, options);
  }

  /** Block p of root's `buffer` to rank p's options.output (or `buffer` on non-roots). */
  scatter(buffer: TypedArray, options: RootedOptions = {}): Promise<void> {
    return this.start(() => {
      const { input, dtype } = this.typed(buffer, options.dtype);
      const root = checkRank(options.root ?? 0, this.size, 'root', this.rank);
      if (this.rank === root) return this.plan('scatter', dtype, 'sum', this.blockCount(input, 'scatter'), root, input, options.output, options.algorithm);
      const output = options.output ?? input;
      // A non-root's block lands in its output alone, which the plan then sees as in place: hold it to the call's dtype here.
      if (options.output !== undefined) checkSameType(checkTypedArray(output, 'output', this.rank), dtype, 'output', this.rank);
      return this.plan('scatter', dtype, 'sum', output.length, root, output, output, options.algorithm);
    }, options);
  }

  /** Resolves once every rank has called barrier. */
  barrier(options: CallOptions = {}): Promise<void> {
    return this.start(() => this.plan('barrier', dtypeInfo('uint8'), 'sum', 0, 0, EMPTY, undefined, undefined), options);
  }

  /** Sends `buffer` to `peer`; resolves once the peer has received it. Matches the peer's recv in order. */
  send(buffer: TypedArray, peer: number, options: CallOptions = {}): Promise<void> {
    return this.pointToPoint('send', buffer, peer, options);
  }

  /** Receives into `buffer` from `peer`; the sender's count must equal buffer.length. */
  recv(buffer: TypedArray, peer: number, options: CallOptions = {}): Promise<void> {
    return this.pointToPoint('recv', buffer, peer, options);
  }

  /**
   * Splits this communicator into groups by color, ordered by key, as MPI_Comm_split and
   * ncclCommSplit do. Collective: every rank must call it. Ranks with no color get null.
   */
  async split(options: SplitOptions): Promise<Communicator | null> {
    this.ensureUsable();
    const { color } = options;
    if (color !== null && (!Number.isInteger(color) || color === undefined)) {
      throw invalidArgument(`Rank ${this.rank}: split color must be an integer or null, got ${String(color)}`, { rank: this.rank, argument: 'color' });
    }
    const key = options.key ?? this.rank;
    if (!Number.isInteger(key)) throw invalidArgument(`Rank ${this.rank}: split key must be an integer, got ${String(key)}`, { rank: this.rank, argument: 'key' });
    const joins = color !== null && color >= 0;
    const contribution = this.backend.prepareSplit(joins);
    const mine = new Float64Array([joins ? color : -1, key, contribution]);
    const everyone = new Float64Array(3 * this.size);
    const index = this.splits++;
    const call = checkCallOptions(options, this.defaultTimeoutMs, this.rank);
    await this.start(() => ({ ...this.plan('allGather', dtypeInfo('float64'), 'sum', 3, 0, mine, everyone, undefined), label: 'split' }), options);
    if (!joins) {
      this.backend.abandonSplit(contribution);
      return null;
    }
    const members = Array.from({ length: this.size }, (_, r) => r)
      .filter((r) => everyone[3 * r] === color)
      .sort((a, b) => everyone[3 * a + 1] - everyone[3 * b + 1] || a - b);
    const name = childName(this.name, `split${index}.color${color}`);
    const backend = await this.backend.completeSplit({
      members, contributions: members.map((r) => everyone[3 * r + 2]), rank: members.indexOf(this.rank), name, timeoutMs: call.timeoutMs,
    });
    return new Communicator({ arena: this.arena, backend, name, defaultTimeoutMs: this.defaultTimeoutMs });
  }

  /** Waits for pending calls, then retires the communicator; later calls fail with TSCCL_ERR_DESTROYED. */
  async destroy(): Promise<void> {
    if (this.destroyed) return;
    this.destroyed = true;
    await Promise.allSettled([this.chain, ...this.p2pChains.values()]);
    // The memos hold the last call's buffers; let them go with the communicator.
    this.lastPlan = undefined;
    this.lastPrepared = undefined;
    this.recorder.retire();
    await this.backend.close();
    // Staging space goes back to the arena. Not after a failed call: a peer may still be reading
    // what this rank staged for it. The mailbox is the backend's: reused once every member closed.
    if (this.failure === undefined) for (const space of this.workspaces.values()) this.arena.free(space.offset);
    this.workspaces.clear();
  }

  /** The call's buffer, checked, and its dtype. */
  private typed(buffer: TypedArray, dtype: DType | undefined): { input: TypedArray; dtype: DTypeInfo } {
    const input = checkTypedArray(buffer, 'buffer', this.rank);
    return { input, dtype: resolveDType(input, dtype, 'buffer', this.rank) };
  }

  private blockCount(buffer: TypedArray, op: string): number {
    if (buffer.length % this.size !== 0) {
      throw invalidArgument(`Rank ${this.rank}: ${op} buffer of ${buffer.length} elements does not split into ${this.size} equal blocks`, { rank: this.rank, argument: 'buffer', op });
    }
    return buffer.length / this.size;
  }

  private plan(collective: Collective, dtype: DTypeInfo, opName: unknown, count: number, root: number, input: TypedArray, output: TypedArray | undefined,
    algorithm: string | undefined, variable: Partial<CallShape> = EQUAL_BLOCKS): CallPlan {
    const last = this.lastPlan;
    if (last !== undefined && variable === EQUAL_BLOCKS && last.plan.input === input && last.output === output && last.opName === opName
      && last.plan.collective === collective && last.plan.dtype === dtype && last.plan.shape.count === count && last.plan.shape.root === root
      && last.plan.algorithm === algorithm && last.inputLength === input.length && last.outputLength === output?.length) {
      return last.plan;
    }
    const op = parseReduceOp(opName ?? 'sum');
    checkOpForType(op, dtype);
    if (output !== undefined) checkTypedArray(output, 'output', this.rank);
    const inPlace = output === undefined || output === input;
    const hosts = this.backend.hosts;
    const shape: CallShape = { collective, nranks: this.size, count, root, inPlace, chunkCount: 0, ...variable, ...(hosts ? { hosts } : {}) };
    const needed = bufferCounts(shape, this.rank);
    if (inPlace) {
      checkLength(input, inPlaceExtent(shape, this.rank), 'buffer', this.rank, `in-place ${collective} of ${count} elements per block`);
    } else {
      checkSameType(output, dtype, 'output', this.rank);
      checkLength(input, needed.input, 'buffer', this.rank, `${collective} of count ${count}`);
      checkLength(output, needed.output, 'output', this.rank, `${collective} of count ${count}`);
    }
    const plan: CallPlan = { collective, label: collective, dtype, op, shape, input, output: inPlace ? undefined : output, algorithm };
    if (variable === EQUAL_BLOCKS) this.lastPlan = { plan, opName, output, inputLength: input.length, outputLength: output?.length };
    return plan;
  }

  /** Checks arguments now (so bad input never blocks a peer), then queues the call on this communicator. */
  private start(makePlan: () => CallPlan, options: CallOptions): Promise<void> {
    try {
      this.ensureUsable();
      const plan = makePlan();
      const call = checkCallOptions(options, this.defaultTimeoutMs, this.rank);
      const seq = ++this.seq;
      const record = this.recorder.record({
        seq, op: plan.label, dtype: plan.dtype.name, count: plan.shape.count, root: plan.shape.root,
        redop: REDUCING_COLLECTIVES.has(plan.collective) ? plan.op : 'none',
      });
      const checksum = call.checksum ?? checksumDefault;
      const go = () => this.runCollective(plan, seq, call.timeoutMs, call.signal, record, checksum);
      // An idle communicator starts the call at once (a small call may then finish before this
      // returns, and hand back an already settled promise); otherwise it queues behind the calls
      // in flight, in call order.
      const idle = this.inFlight === 0;
      this.inFlight++;
      const run = idle ? go() : this.chain.then(go);
      this.chain = run === DONE ? DONE : run.catch(() => undefined);
      return run;
    } catch (err) {
      return Promise.reject(err);
    }
  }

  /** Runs a call; DONE when it finished without waiting. */
  private runCollective(plan: CallPlan, seq: number, timeoutMs: number, signal: AbortSignal | undefined, record: OpRecord, checksum: boolean | undefined): Promise<void> {
    record.state = 'running';
    record.startedAt = Date.now();
    let pending: Promise<void> | undefined;
    let ctx: OpContext;
    try {
      this.ensureUsable();
      ctx = new OpContext(this.scope, { op: plan.label, seq, timeoutMs, signal, collective: true, participants: this.allRanks });
      pending = this.execute(plan, seq, ctx, record, checksum);
      if (pending === undefined) ctx.endReads();
    } catch (err) {
      return Promise.reject(this.ended(record, seq, err));
    }
    if (pending === undefined) {
      this.ended(record, seq, undefined);
      return DONE;
    }
    return pending.then(() => {
      try {
        ctx.endReads();
      } catch (err) {
        throw this.ended(record, seq, err);
      }
      this.ended(record, seq, undefined);
    }, (err: unknown) => { throw this.ended(record, seq, err); });
  }

  /** Closes a call's record (and retires the communicator if it failed); returns the error to throw. */
  private ended(record: OpRecord, seq: number, err: unknown): unknown {
    record.endedAt = Date.now();
    // Before the call's promise settles, so a caller that awaited it finds the communicator idle.
    this.inFlight--;
    if (err === undefined) {
      record.state = 'done';
      this.backend.status.end(seq);
      return undefined;
    }
    record.state = 'failed';
    record.error = err instanceof TscclError ? err.code : String(err);
    return this.fail(err, seq);
  }

  /** Runs the call on this rank: undefined if it finished without waiting, else a promise. */
  private execute(plan: CallPlan, seq: number, ctx: OpContext, record: OpRecord, checksum: boolean | undefined): Promise<void> | undefined {
    const last = this.lastPrepared;
    const prepared = last !== undefined && last.plan === plan && last.checksum === checksum ? last : (this.lastPrepared = this.prepare(plan, checksum));
    const { bytes, selection, kernel, opcode, scale, oneShot, schedule } = prepared;
    const { dtype, shape } = plan;
    record.algorithm = selection.algorithm;
    log('INFO', () => `${this.name} rank ${this.rank}: ${plan.label} #${seq} ${bytes} B ${dtype.name} -> ${selection.algorithm} (${selection.protocol}, chunk ${selection.chunkCount} elements)`);
    this.backend.status.enter(seq);
    if (oneShot !== undefined) {
      const pending = oneShot.run(seq, ctx);
      if (!scale) return pending;
      const finish = () => scaleKernel(dtype.name)(oneShot.output, this.size);
      if (pending !== undefined) return pending.then(finish);
      finish();
      return undefined;
    }
    return (async () => {
      if (debugCheck) await this.checkSameCall(plan, seq, ctx);
      const buffers = this.stage(plan, schedule!.scratchCount);
      await executeSchedule({
        schedule: schedule!, buffers: buffers.exec, dtype, kernel, transport: this.backend.transport, tag: { seq, opcode, checksum }, ctx, channelBase: 0,
      });
      if (scale) scaleKernel(dtype.name)(buffers.exec.output, this.size);
      buffers.copyBack();
    })();
  }

  /** Chooses the algorithm for a plan and builds what it runs with (the one-shot run, if chosen). */
  private prepare(plan: CallPlan, checksum: boolean | undefined): PreparedCall {
    const { dtype, shape } = plan;
    // The root's input, not this rank's: the same on every rank (a broadcast's non-root input is
    // empty), so every rank picks the same schedule for a size-dependent rule.
    const bytes = bufferCounts(shape, shape.root).input * dtype.bytes;
    const override = plan.algorithm ?? algorithmOverrides.get(plan.collective);
    const hostCount = shape.hosts === undefined ? 1 : Math.max(...shape.hosts) + 1;
    const slots = this.backend.transport.lowLatency;
    const offer = slots === undefined || checksum === true || debugCheck
      ? undefined : oneShotOffer(shape, dtype.bytes, slots.capacity);
    // Thread ranks share one machine, which the tuner's cost model knows from the profile.
    const machine = this.backend.kind === 'shm' && hostCount === 1 && override === undefined ? localMachine(this.size, 'shm').graph : undefined;
    const selection = selectAlgorithm({
      collective: plan.collective, nranks: this.size, bytes, elementBytes: dtype.bytes, algorithm: override, hostCount, oneShot: offer,
      transport: this.backend.kind, oversubscribed: this.backend.oversubscribed, machine,
    });
    const kernel = arenaKernels(this.arena).reduce(dtype.name, plan.op);
    const opcode = opcodeOf(plan.collective);
    const scale = plan.op === 'avg' && (plan.collective !== 'reduce' || this.rank === shape.root);
    // The one-shot path copies through its slots anyway, so user memory needs no staging.
    const oneShot = selection.protocol === 'll'
      ? new OneShotCall({ shape, rank: this.rank, ...this.callViews(shape, plan.input!, plan.output), dtype, kernel, slots: slots!, opcode })
      : undefined;
    const schedule = oneShot === undefined ? buildSchedule({ ...shape, chunkCount: selection.chunkCount }, this.rank, selection.algorithm) : undefined;
    return { plan, checksum, bytes, selection, kernel, opcode, scale, oneShot, schedule };
  }

  /**
   * TSCCL_DEBUG_CHECK: ranks all-gather a fingerprint of the call (sequence, operation, dtype,
   * count, root, reduction) before running it; any difference fails every rank, naming both sides.
   */
  private async checkSameCall(plan: CallPlan, seq: number, ctx: OpContext): Promise<void> {
    const info = dtypeInfo('float64');
    const mine = this.workspace('check-mine', info, 8) as Float64Array;
    const all = this.workspace('check-all', info, 8 * this.size) as Float64Array;
    mine.set(fingerprintOf(seq, plan.collective, plan.dtype.name, plan.shape.count, plan.shape.root, plan.op, REDUCING_COLLECTIVES.has(plan.collective)));
    const shape: CallShape = { collective: 'allGather', nranks: this.size, count: 8, root: 0, inPlace: false, chunkCount: 0 };
    await executeSchedule({
      schedule: buildSchedule(shape, this.rank, 'ring'), buffers: { input: mine, output: all, scratch: mine }, dtype: info,
      kernel: reduceKernel('float64', 'sum'), transport: this.backend.transport, tag: { seq, opcode: opcodeOf('check') }, ctx, channelBase: 0,
    });
    checkFingerprints(all, this.rank, this.name);
  }

  /**
   * Ends every pending call of this communicator on this rank now (TSCCL_ERR_ABORTED) and tells
   * the peers, whose pending and later calls fail naming this rank. Never blocks.
   */
  abort(reason = 'aborted by the application'): void {
    if (this.failure?.code === ErrorCode.ABORTED) return;
    this.failure = new TscclError(ErrorCode.ABORTED, `Communicator ${this.name} was aborted on rank ${this.rank}: ${reason}`, { rank: this.rank });
    this.backend.status.fail(ErrorCode.ABORTED, this.seq, this.rank);
    this.backend.wakeAll();
    dumpFlightRecords(`abort: ${reason}`);
  }

  /**
   * A working communicator of the ranks not excluded (ncclCommShrink, MPIX_Comm_shrink): works
   * on a failed or aborted communicator, needs only the survivors, and numbers them in order.
   */
  async shrink(options: ShrinkOptions): Promise<Communicator> {
    if (this.destroyed) throw new TscclError(ErrorCode.DESTROYED, `Communicator ${this.name} on rank ${this.rank} was destroyed`, { rank: this.rank });
    const exclude = options?.exclude;
    if (!Array.isArray(exclude) || exclude.some((r) => !Number.isInteger(r) || r < 0 || r >= this.size)) {
      throw invalidArgument(`Rank ${this.rank}: shrink needs exclude, a list of ranks in [0, ${this.size - 1}]`, { rank: this.rank, argument: 'exclude' });
    }
    if (exclude.includes(this.rank)) throw invalidArgument(`Rank ${this.rank} cannot shrink a communicator it excludes itself from`, { rank: this.rank, argument: 'exclude' });
    const call = checkCallOptions(options, this.defaultTimeoutMs, this.rank);
    const survivors = Array.from({ length: this.size }, (_, r) => r).filter((r) => !exclude.includes(r));
    const epoch = ++this.shrinks;
    const name = childName(this.name, `shrink${epoch}`);
    const backend = await this.backend.shrink({ survivors, epoch, name, timeoutMs: call.timeoutMs, signal: call.signal });
    return new Communicator({ arena: this.arena, backend, name, defaultTimeoutMs: this.defaultTimeoutMs });
  }

  /** A call's input and output views: over `user` alone when in place, else over both arrays. */
  private callViews(shape: CallShape, user: TypedArray, output: TypedArray | undefined): { input: TypedArray; output: TypedArray } {
    const counts = bufferCounts(shape, this.rank);
    if (output !== undefined) return { input: user.subarray(0, counts.input) as TypedArray, output: output.subarray(0, counts.output) as TypedArray };
    const layout = inPlaceLayout(shape, this.rank);
    const inner = user.subarray(layout.offset, layout.offset + counts[layout.inner]) as TypedArray;
    const outer = user.subarray(0, inPlaceExtent(shape, this.rank)) as TypedArray;
    return layout.inner === 'input' ? { input: inner, output: outer } : { input: outer, output: inner };
  }

  /**
   * The views a call runs on: the user's own arrays when registered or when no peer reads them in
   * place (TCP alone: staging 8 MB in and out took 2.3 ms of a 7 ms all-reduce), staging copies
   * in the arena otherwise.
   */
  private stage(plan: CallPlan, scratchCount: number) {
    const { dtype, shape } = plan;
    const counts = bufferCounts(shape, this.rank);
    const direct = (user: TypedArray) => !this.backend.sharesMemory || this.arena.contains(user);
    const place = (user: TypedArray, slot: string, count: number, copyIn: boolean): TypedArray => {
      if (direct(user)) return user.subarray(0, count) as TypedArray;
      const staged = this.workspace(slot, dtype, count);
      if (copyIn) staged.set(user.subarray(0, count) as never);
      return staged;
    };
    const scratch = this.workspace('scratch', dtype, scratchCount);
    const user = plan.input!;
    if (plan.output === undefined) {
      const outer = place(user, 'input', inPlaceExtent(shape, this.rank), true);
      const { input, output } = this.callViews(shape, outer, undefined);
      return { exec: { input, output, scratch }, copyBack: () => { if (!direct(user)) user.set(outer as never); } };
    }
    const input = place(user, 'input', counts.input, true);
    const output = place(plan.output, 'output', counts.output, false);
    const userOutput = plan.output;
    return {
      exec: { input, output, scratch },
      copyBack: () => { if (!direct(userOutput)) userOutput.set(output as never); },
    };
  }

  /** A reusable arena buffer per purpose, grown when a call needs more. */
  private workspace(slot: string, dtype: DTypeInfo, count: number): TypedArray {
    const bytes = count * dtype.bytes;
    let space = this.workspaces.get(slot);
    if (space === undefined || space.bytes < bytes) {
      if (space !== undefined) this.arena.free(space.offset);
      space = { offset: this.arena.allocate(Math.max(bytes, 64)), bytes: Math.max(bytes, 64) };
      this.workspaces.set(slot, space);
    }
    return this.arena.view(dtype.ctor as never, space.offset, count, dtype.bytes) as TypedArray;
  }

  private pointToPoint(kind: 'send' | 'recv', buffer: TypedArray, peer: number, options: CallOptions): Promise<void> {
    try {
      this.ensureUsable();
      const data = checkTypedArray(buffer, 'buffer', this.rank);
      checkRank(peer, this.size, 'peer', this.rank);
      const call = checkCallOptions(options, this.defaultTimeoutMs, this.rank);
      const counters = kind === 'send' ? this.p2pSent : this.p2pReceived;
      const seq = ++counters[peer];
      const key = `${kind}${peer}`;
      const checksum = call.checksum ?? checksumDefault;
      const run = (this.p2pChains.get(key) ?? Promise.resolve()).then(() => this.runPointToPoint(kind, data, peer, seq, call.timeoutMs, call.signal, checksum));
      this.p2pChains.set(key, run.catch(() => undefined));
      return run;
    } catch (err) {
      return Promise.reject(err);
    }
  }

  private async runPointToPoint(kind: 'send' | 'recv', data: TypedArray, peer: number, seq: number, timeoutMs: number, signal: AbortSignal | undefined, checksum: boolean | undefined): Promise<void> {
    this.ensureUsable();
    const ctx = new OpContext(this.scope, { op: kind, seq, timeoutMs, signal, collective: false, participants: [peer] });
    const tag = { seq, opcode: opcodeOf('send'), checksum };
    const bytes = new Uint8Array(data.buffer, data.byteOffset, data.byteLength);
    try {
      if (kind === 'recv') {
        // Checked before the transport hands the sender's memory back (shared memory does right
        // after): a sender may give up once its send was delivered, and that endangers nothing.
        const copy = copyInto(bytes);
        const consume = Object.assign((piece: Uint8Array, byteOffset: number) => { copy(piece, byteOffset); ctx.endReads(); }, { into: bytes });
        await this.backend.transport.recv(peer, P2P_CHANNEL, bytes.byteLength, 1, tag, consume, ctx);
        return;
      }
      let source = bytes;
      let staged: number | undefined;
      if (!this.arena.contains(data)) {
        staged = this.arena.allocate(bytes.byteLength);
        source = this.arena.bytes(staged, bytes.byteLength);
        source.set(bytes);
      }
      const handle = await this.backend.transport.send(peer, P2P_CHANNEL, source, tag, ctx);
      await this.backend.transport.waitDelivered(handle, ctx);
      // Only once delivered: after a failed send the peer may still read the staged copy in place,
      // so it stays, as a failed communicator's staging space does.
      if (staged !== undefined) this.arena.free(staged);
    } catch (err) {
      throw this.fail(err, seq);
    }
  }

  /**
   * After a call fails mid-flight the queues to its peers are out of step, so the communicator is
   * retired (as NCCL requires ncclCommAbort after an error) and peers are told through the status words.
   */
  private fail(err: unknown, seq: number): unknown {
    if (err instanceof TscclError && err.code !== ErrorCode.INVALID_ARGUMENT && this.failure === undefined) {
      // An abort stays an abort for every later call too; other failures retire the communicator.
      this.failure = new TscclError(err.code === ErrorCode.ABORTED ? ErrorCode.ABORTED : ErrorCode.COMM_FAILED,
        `Communicator ${this.name} on rank ${this.rank} is unusable after an earlier failure: ${err.message}`, { rank: this.rank, cause: err.code });
      const origin = typeof err.details.origin === 'number' ? err.details.origin
        : err.code === ErrorCode.PEER_LOST && typeof err.details.peer === 'number' ? err.details.peer : this.rank;
      this.backend.status.fail(err.code, seq, origin);
      dumpFlightRecords(`${err.code}: ${err.message}`);
    }
    return err;
  }

  private ensureUsable(): void {
    if (this.destroyed) {
      throw new TscclError(ErrorCode.DESTROYED, `Communicator ${this.name} on rank ${this.rank} was destroyed`, { rank: this.rank });
    }
    if (this.failure !== undefined) throw this.failure;
  }
}
