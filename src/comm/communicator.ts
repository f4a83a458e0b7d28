import { type CallShape, type Collective, REDUCING_COLLECTIVES, bufferCounts } from '../algorithms/schedule.js';
import { type DType, type DTypeArrayMap, type DTypeInfo, type TypedArray, dtypeInfo } from '../dtypes/dtype.js';
import { TscclError, invalidArgument } from '../errors.js';
import { bytesOverlap, executeSchedule } from '../exec/executor.js';
import { arenaKernels } from '../kernels/simd-kernels.js';
import type { Arena } from '../memory/arena.js';
import { groupFusionMaxBytes } from '../tuner/group-fusion.js';
import { type Prediction, predictCall } from '../tuner/predict.js';
import { checkSelectable } from '../tuner/select.js';
import { prepareThreadChoices } from './thread-choices.js';
import { childName } from './comm-name.js';
import { log, logs } from '../log.js';
import { CommunicatorScope } from './comm-scope.js';
import { OpContext } from './op-context.js';
import type { CommBackend } from './backend.js';
import {
  type CommRecord,
  FlightRecorder,
  type LiveRecord,
  type RecordEntry,
  installSignalDump,
} from '../debug/flight-recorder.js';
import { checkSameCall } from './desync-check.js';
import {
  algorithmOverrides,
  checksumDefault,
  compressionDefault,
  compressionShadowDefault,
  debugCheck,
  opRetries,
  saveInputForRetry,
} from './call-defaults.js';
import { type CompressionSpec, compressionLabel, parseCompression } from '../compress/compression-spec.js';
import { CompressedCall } from './compressed-call.js';
import { compressionHierarchy } from '../tuner/compression-hierarchy.js';
import { type CompressionReport, compareResults } from './compression-shadow.js';
import { settleAll } from './settle-all.js';
import { type Group, type GroupPrediction, priceGroup, runGroup } from './call-group.js';
import { InFlightGuard } from './in-flight-guard.js';
import { allocArray, freeArray } from './arena-arrays.js';
import {
  type AllToAllOptions,
  type CallOptions,
  type CallSettings,
  type CollectiveOptions,
  type OptionsCall,
  type PredictOptions,
  type ReduceOptions,
  type RootedOptions,
  type RootedReduceOptions,
  type ShrinkOptions,
  type SplitOptions,
  checkOptions,
} from './call-options.js';
import { type CallPlan, type PlanRequest, callViews, isCompressible } from './call-plan.js';
import { LastCall } from './last-call.js';
import { PlanMemo } from './plan-memo.js';
import { CallQueue, DONE } from './call-queue.js';
import type { OneShotCall } from '../exec/one-shot.js';
import { FailurePolicy } from './failure-policy.js';
import { type CommStats, addRecoveries, commStats } from './comm-stats.js';
import type { RecoveryCounts } from '../transport/transport.js';
import { mendable, notRunAgain, restoreInput, retryVeto, savedInput } from './operation-retry.js';
import { PointToPoint } from './point-to-point.js';
import { type PreparedCall, RecipeCache, type SelectionSite, prepareCall, selectionSite } from './prepared-call.js';
import { Workspaces, stageCall } from './staging.js';
import { checkCounts, checkRank, checkSameType, checkTypedArray, resolveDType } from './validate.js';
import { epochMs } from '../debug/epoch-clock.js';

export type {
  AllToAllOptions,
  CallOptions,
  CollectiveOptions,
  PredictOptions,
  ReduceOptions,
  RootedOptions,
  RootedReduceOptions,
  ShrinkOptions,
  SplitOptions,
} from './call-options.js';

const EMPTY = new Uint8Array(0);
/** Shadow reports a communicator keeps. */
const MAX_REPORTS = 64;

/**
 * A group of ranks that run collectives together. Calls on one communicator run one after
 * another in call order, as on an NCCL stream; calls on different communicators run
 * concurrently. Every call returns a Promise and takes { timeoutMs, signal }.
 *
 * A facade: options are checked by call-options, calls planned by call-plan, queued by
 * call-queue, prepared (the tuner's choice) by prepared-call, staged by staging; sends and
 * receives are point-to-point's, and failures the failure policy's.
 */
export class Communicator {
  readonly rank: number;
  readonly size: number;
  /** A readable name, e.g. "world" or "world.split0.color1". */
  readonly name: string;
  /** Calls run on the rank's own thread (init({ progress: 'engine' }) gives a communicator whose calls do not). */
  readonly progress = 'inline' as const;
  private readonly arena: Arena;
  /** Replaced by new connections when a failed call runs again (operation retry). */
  private backend: CommBackend;
  private readonly defaultTimeoutMs: number;
  /** What option checks need to know of this communicator (one object, not one per call). */
  private readonly where: { rank: number; defaultTimeoutMs: number; defaults?: CallSettings };
  private seq = 0;
  private splits = 0;
  private shrinks = 0;
  private siblings = 0;
  private readonly queue = new CallQueue();
  private readonly failures: FailurePolicy;
  private readonly p2p: PointToPoint;
  private readonly workspaces: Workspaces;
  private readonly recorder: FlightRecorder;
  private site: SelectionSite;
  /** Calls run again after a failure (operation retry), and what the links replaced since recovered from. */
  private retries = 0;
  /** Retry meetings this communicator held: each names one, the same on every rank. */
  private meetings = 0;
  private pastRecoveries: RecoveryCounts[] = [];
  /** 0..size-1, the participants of every collective (built once, not per call). */
  private readonly allRanks: readonly number[];
  /**
   * The last call's plan and preparation, reused while calls repeat it (same buffers, lengths,
   * size, op, algorithm): a stream of small calls then checks, selects and builds views once.
   */
  private readonly plans: PlanMemo;
  /** The last call's checked options and plan, which a repeat of it takes as they are. */
  private readonly lastCall = new LastCall();
  /** Under TSCCL_DEBUG_CHECK: what each call queued or running on this communicator writes (one entry per call). */
  private readonly queuedWrites = new Set<{ readonly written: TypedArray }>();
  private lastPrepared: PreparedCall | undefined;
  /** What recent calls chose, by shape, for calls of those shapes on other arrays. */
  private readonly recipes = new RecipeCache();
  private lastCompressed: { plan: CallPlan; call: CompressedCall } | undefined;
  private readonly reports: CompressionReport[] = [];
  /** What every call's wait context shares. */
  private readonly scope: CommunicatorScope;
  /** The context of the last collective that ended well, for the next one (collectiveContext). */
  private spareContext: OpContext | undefined;
  /** What planReduction hands the plan memo. */
  private readonly reductionRequest: { -readonly [K in keyof PlanRequest]: PlanRequest[K] } = {
    collective: 'allReduce',
    dtype: dtypeInfo('float32'),
    op: undefined,
    count: 0,
    root: 0,
    input: new Float32Array(0),
    output: undefined,
    algorithm: undefined,
    compression: undefined,
    variable: undefined,
  };
  /** What enqueuePlan hands the flight recorder, which copies it: one object, not one per call. */
  private readonly recordEntry: RecordEntry = { seq: 0, op: '', dtype: '', count: 0, root: 0, redop: '' };
  /** The plan recordEntry describes: a call of the same plan sets its number only. */
  private recordedPlan: CallPlan | undefined;
  private readonly logsCalls: boolean;

  constructor(options: {
    arena: Arena;
    backend: CommBackend;
    name: string;
    defaultTimeoutMs: number;
    /** Whether TSCCL_DEBUG=INFO logs each call (not the thousands of init's warm-up). */
    logsCalls?: boolean;
  }) {
    this.arena = options.arena;
    this.logsCalls = options.logsCalls ?? true;
    this.backend = options.backend;
    this.rank = options.backend.transport.rank;
    this.size = options.backend.transport.nranks;
    this.name = options.name;
    this.defaultTimeoutMs = options.defaultTimeoutMs;
    this.where = { rank: this.rank, defaultTimeoutMs: this.defaultTimeoutMs };
    this.recorder = new FlightRecorder(this.name, this.rank, this.size);
    this.recorder.recoveriesFrom(() => this.stats().peers);
    this.allRanks = Array.from({ length: this.size }, (_, r) => r);
    const owner = this;
    this.failures = new FailurePolicy({
      name: this.name,
      rank: this.rank,
      get backend() {
        return owner.backend;
      },
    });
    this.workspaces = new Workspaces(this.arena);
    this.site = selectionSite(this.backend, this.size);
    this.plans = new PlanMemo({ rank: this.rank, size: this.size, hosts: this.backend.hosts });
    this.scope = new CommunicatorScope(this.backend, this.failures, { rank: this.rank, commName: this.name });
    // The first collective renews this one as every later one does: a path taken only on a
    // communicator's first call has no type feedback in V8's optimised code, and taking it
    // there throws the warmed code away (init's warm-up warms it on another communicator).
    this.spareContext = new OpContext(this.scope, {
      op: '',
      seq: 0,
      timeoutMs: this.defaultTimeoutMs,
      signal: undefined,
      collective: true,
      participants: this.allRanks,
    });
    this.p2p = new PointToPoint({
      rank: this.rank,
      size: this.size,
      arena: this.arena,
      get backend() {
        return owner.backend;
      },
      scope: this.scope,
      failures: this.failures,
      defaultTimeoutMs: this.defaultTimeoutMs,
      recorder: this.recorder,
    });
    // Thread ranks rank every size class now, so that no call runs the cost model.
    if (this.backend.kind === 'shm')
      prepareThreadChoices(this.size, {
        oversubscribed: this.backend.oversubscribed,
        oneShotCapacity: this.backend.transport.lowLatency?.capacity,
      });
    installSignalDump();
  }

  /**
   * For init's warm-up: this rank's next view of the shared arena takes the path of a view after
   * another rank grew it (Arena.forgetBufferLength).
   */
  rereadArena(): void {
    this.arena.forgetBufferLength();
  }

  /**
   * Busy threads of this communicator's ranks on this rank's machine, its own included (a thread
   * rank's progress engine counts too): where they outnumber the cores, they take turns on them.
   */
  get machineThreads(): number {
    return this.backend.machineThreads;
  }

  /** 'shm' for thread ranks of one process, 'tcp' for ranks in separate processes. */
  get transportKind(): 'shm' | 'tcp' {
    return this.backend.kind;
  }

  /** The largest all-reduce `group` fuses with others: the tuner's limit for where these ranks are. */
  get groupFusionMaxBytes(): number {
    return groupFusionMaxBytes(this.site);
  }

  /**
   * This rank's flight record of the communicator: its last TSCCL_FLIGHT_RECORDER_ENTRIES
   * operations, oldest first, each with the algorithm that ran it, its state and times (what
   * a timeout or abort writes to TSCCL_TRACE_DIR). A copy; does not communicate.
   */
  flightRecords(): CommRecord {
    return this.recorder.snapshot();
  }

  /** What this rank's links recovered from so far (TCP resend: frames corrupted, asked for, resent), in total and per peer. */
  stats(): CommStats {
    return commStats(addRecoveries(this.pastRecoveries, this.backend.transport.recoveries?.() ?? []), this.retries);
  }

  /**
   * What a call of `bytes` (the root's input, as the tuner sizes a call: a broadcast's message
   * on every rank) would cost on this machine and which algorithm the tuner would run for it:
   * the tuner's choice, simulated on the local topology from the `tsccl tune` profile (defaults
   * when none). Does not communicate.
   */
  predict(collective: string, bytes: number, options: PredictOptions = {}): Prediction {
    checkOptions('predict', options, this.where);
    const algorithm = options.algorithm ?? algorithmOverrides.get(collective as Collective);
    const { transport, hostCount, oversubscribed, oneShotCapacity } = this.site;
    return predictCall({
      collective,
      bytes,
      nranks: this.size,
      elementBytes: dtypeInfo(options.dtype ?? 'float32').bytes,
      transport,
      hostCount,
      oversubscribed,
      algorithm,
      oneShotCapacity,
      checksum: options.checksum ?? checksumDefault,
      debugCheck,
      inPlace: options.inPlace,
    });
  }

  /**
   * A typed array of `count` zeroed elements in the shared arena (registered memory): collectives on it
   * need no staging copy, and peers read it in place. Its memory returns on `free`, or when the
   * array is garbage collected, which may come late: the collector does not see the arena fill.
   */
  alloc<D extends DType>(dtype: D, count: number): DTypeArrayMap[D] {
    return allocArray(this.arena, dtype, count, this.rank);
  }

  /**
   * Returns an array from `alloc` to the arena now, as ncclMemFree does; call it once every call
   * that uses the array has resolved, and do not use the array after.
   */
  free(buffer: TypedArray): void {
    freeArray(this.arena, buffer, this.rank);
  }

  /** Reduces `buffer` across ranks; the result lands in options.output, or in `buffer` itself. */
  allReduce(buffer: TypedArray, options: ReduceOptions = {}): Promise<void> {
    return this.start('allReduce', options, buffer, this.planAllReduce);
  }

  /** allReduce's plan, its arguments checked (start calls it once the options passed). */
  private planAllReduce(buffer: TypedArray, options: ReduceOptions): CallPlan {
    // typed()'s two checks without its pair object: the all-reduce is the commonest small call.
    const input = checkTypedArray(buffer, 'buffer', this.rank);
    const dtype = resolveDType(input, options.dtype, 'buffer', this.rank);
    return this.planReduction('allReduce', input, dtype, input.length, options);
  }

  /** The plan of an all-reduce or reduce-scatter of `count` elements (a block's, for reduce-scatter). */
  private planReduction(
    collective: 'allReduce' | 'reduceScatter',
    input: TypedArray,
    dtype: DTypeInfo,
    count: number,
    options: ReduceOptions,
  ): CallPlan {
    // One request object refilled per call (the memo copies what it keeps): an object per call is garbage.
    const request = this.reductionRequest;
    request.collective = collective;
    request.dtype = dtype;
    request.op = options.op;
    request.count = count;
    request.input = input;
    request.output = options.output;
    request.algorithm = options.algorithm;
    request.compression = this.compressionFor(options, dtype, true);
    return this.plans.plan(request);
  }

  /** Copies root's `buffer` to every rank's options.output (or `buffer`). */
  broadcast(buffer: TypedArray, options: RootedOptions = {}): Promise<void> {
    return this.start('broadcast', options, buffer, this.planBroadcast);
  }

  /** broadcast's plan, its arguments checked (start calls it once the options passed). */
  private planBroadcast(buffer: TypedArray, options: RootedOptions): CallPlan {
    const { input, dtype } = this.typed(buffer, options.dtype);
    const root = checkRank(options.root ?? 0, this.size, 'root', this.rank);
    const count =
      options.output !== undefined ? checkTypedArray(options.output, 'output', this.rank).length : input.length;
    return this.plans.plan({
      collective: 'broadcast',
      dtype,
      op: undefined,
      count,
      root,
      input,
      output: options.output,
      algorithm: options.algorithm,
      compression: this.compressionFor(options, dtype, false),
      variable: undefined,
    });
  }

  /** Reduces every rank's `buffer` into root's options.output (or root's `buffer`). */
  reduce(buffer: TypedArray, options: RootedReduceOptions = {}): Promise<void> {
    return this.start('reduce', options, buffer, this.planReduce);
  }

  /** reduce's plan, its arguments checked (start calls it once the options passed). */
  private planReduce(buffer: TypedArray, options: RootedReduceOptions): CallPlan {
    const { input, dtype } = this.typed(buffer, options.dtype);
    const root = checkRank(options.root ?? 0, this.size, 'root', this.rank);
    return this.plans.plan({
      collective: 'reduce',
      dtype,
      op: options.op,
      count: input.length,
      root,
      input,
      output: options.output,
      algorithm: options.algorithm,
      compression: this.compressionFor(options, dtype, true),
      variable: undefined,
    });
  }

  /**
   * Every rank's `buffer` into every rank's options.output, in rank order. In place (no output),
   * `buffer` holds size * count elements and this rank's block is at rank * count.
   */
  allGather(buffer: TypedArray, options: CollectiveOptions = {}): Promise<void> {
    return this.start('allGather', options, buffer, this.planAllGather);
  }

  /** allGather's plan, its arguments checked (start calls it once the options passed). */
  private planAllGather(buffer: TypedArray, options: CollectiveOptions): CallPlan {
    const { input, dtype } = this.typed(buffer, options.dtype);
    const count = options.output === undefined ? this.blockCount(input, 'allGather') : input.length;
    return this.plans.plan({
      collective: 'allGather',
      dtype,
      op: undefined,
      count,
      root: 0,
      input,
      output: options.output,
      algorithm: options.algorithm,
      compression: this.compressionFor(options, dtype, false),
      variable: undefined,
    });
  }

  /**
   * Reduces `buffer` (size blocks) and leaves block r on rank r, in options.output or, in place,
   * at buffer[rank * count ...].
   */
  reduceScatter(buffer: TypedArray, options: ReduceOptions = {}): Promise<void> {
    return this.start('reduceScatter', options, buffer, this.planReduceScatter);
  }

  /** reduceScatter's plan, its arguments checked (start calls it once the options passed). */
  private planReduceScatter(buffer: TypedArray, options: ReduceOptions): CallPlan {
    const { input, dtype } = this.typed(buffer, options.dtype);
    return this.planReduction('reduceScatter', input, dtype, this.blockCount(input, 'reduceScatter'), options);
  }

  /** Block p of `buffer` goes to rank p; equal blocks, or the counts and displacements given. */
  allToAll(buffer: TypedArray, options: AllToAllOptions = {}): Promise<void> {
    return this.start('allToAll', options, buffer, this.planAllToAll);
  }

  /** allToAll's plan, its arguments checked (start calls it once the options passed). */
  private planAllToAll(buffer: TypedArray, options: AllToAllOptions): CallPlan {
    const { input, dtype } = this.typed(buffer, options.dtype);
    const request = (count: number, variable: Partial<CallShape> | undefined): PlanRequest => ({
      collective: 'allToAll',
      dtype,
      op: undefined,
      count,
      root: 0,
      input,
      output: options.output,
      algorithm: options.algorithm,
      compression: undefined,
      variable,
    });
    const variable = options.sendCounts !== undefined || options.recvCounts !== undefined;
    if (!variable) return this.plans.plan(request(this.blockCount(input, 'allToAll'), undefined));
    if (options.output === undefined) {
      throw invalidArgument(
        `Rank ${this.rank}: allToAll with sendCounts/recvCounts needs an output buffer (in place works with equal blocks only)`,
        { rank: this.rank, argument: 'output' },
      );
    }
    const sendCounts = checkCounts(options.sendCounts, this.size, 'sendCounts', this.rank);
    const recvCounts = checkCounts(options.recvCounts, this.size, 'recvCounts', this.rank);
    const packed = (counts: number[]) => counts.map((_, i) => counts.slice(0, i).reduce((a, b) => a + b, 0));
    const sendDispls =
      options.sendDispls === undefined
        ? packed(sendCounts)
        : checkCounts(options.sendDispls, this.size, 'sendDispls', this.rank);
    const recvDispls =
      options.recvDispls === undefined
        ? packed(recvCounts)
        : checkCounts(options.recvDispls, this.size, 'recvDispls', this.rank);
    if (sendCounts[this.rank] !== recvCounts[this.rank]) {
      throw invalidArgument(
        `Rank ${this.rank}: sendCounts[${this.rank}] = ${sendCounts[this.rank]} must equal recvCounts[${this.rank}] = ${recvCounts[this.rank]} (the block a rank sends itself)`,
        { rank: this.rank, argument: 'recvCounts' },
      );
    }
    return this.plans.plan(request(0, { sendCounts, recvCounts, sendDispls, recvDispls }));
  }

  /** Every rank's `buffer` into root's options.output, in rank order (in place at root: buffer holds all blocks). */
  gather(buffer: TypedArray, options: RootedOptions = {}): Promise<void> {
    return this.start('gather', options, buffer, this.planGather);
  }

  /** gather's plan, its arguments checked (start calls it once the options passed). */
  private planGather(buffer: TypedArray, options: RootedOptions): CallPlan {
    const { input, dtype } = this.typed(buffer, options.dtype);
    const root = checkRank(options.root ?? 0, this.size, 'root', this.rank);
    const inPlaceRoot = this.rank === root && options.output === undefined;
    const count = inPlaceRoot ? this.blockCount(input, 'gather') : input.length;
    return this.plans.plan({
      collective: 'gather',
      dtype,
      op: undefined,
      count,
      root,
      input,
      output: this.rank === root ? options.output : input,
      algorithm: options.algorithm,
      compression: undefined,
      variable: undefined,
    });
  }

  /** Block p of root's `buffer` to rank p's options.output (or `buffer` on non-roots). */
  scatter(buffer: TypedArray, options: RootedOptions = {}): Promise<void> {
    return this.start('scatter', options, buffer, this.planScatter);
  }

  /** scatter's plan, its arguments checked (start calls it once the options passed). */
  private planScatter(buffer: TypedArray, options: RootedOptions): CallPlan {
    const { input, dtype } = this.typed(buffer, options.dtype);
    const root = checkRank(options.root ?? 0, this.size, 'root', this.rank);
    if (this.rank === root) {
      return this.plans.plan({
        collective: 'scatter',
        dtype,
        op: undefined,
        count: this.blockCount(input, 'scatter'),
        root,
        input,
        output: options.output,
        algorithm: options.algorithm,
        compression: undefined,
        variable: undefined,
      });
    }
    const output = options.output ?? input;
    // A non-root's block lands in its output alone, which the plan then sees as in place: hold it to the call's dtype here.
    if (options.output !== undefined)
      checkSameType(checkTypedArray(output, 'output', this.rank), dtype, 'output', this.rank);
    return this.plans.plan({
      collective: 'scatter',
      dtype,
      op: undefined,
      count: output.length,
      root,
      input: output,
      output,
      algorithm: options.algorithm,
      compression: undefined,
      variable: undefined,
    });
  }

  /** Resolves once every rank has called barrier. */
  barrier(options: CallOptions = {}): Promise<void> {
    return this.start('barrier', options, EMPTY, this.planBarrier);
  }

  private planBarrier(): CallPlan {
    return this.plans.plan({
      collective: 'barrier',
      dtype: dtypeInfo('uint8'),
      op: undefined,
      count: 0,
      root: 0,
      input: EMPTY,
      output: undefined,
      algorithm: undefined,
      compression: undefined,
      variable: undefined,
    });
  }

  /** Sends `buffer` to `peer`; resolves once the peer has received it. Matches the peer's recv in order. */
  send(buffer: TypedArray, peer: number, options: CallOptions = {}): Promise<void> {
    return this.p2p.start('send', buffer, peer, options);
  }

  /** Receives into `buffer` from `peer`; the sender's count must equal buffer.length. */
  recv(buffer: TypedArray, peer: number, options: CallOptions = {}): Promise<void> {
    return this.p2p.start('recv', buffer, peer, options);
  }

  /**
   * Issues the calls `build` records as one (ncclGroupStart/End): small all-reduces fused into
   * few calls, sends and receives posted together so that no order of them deadlocks; under
   * TSCCL_DEBUG_CHECK the ranks compare their groups first (TSCCL_ERR_MISMATCH where they
   * differ). Resolves when every call of the group has; `timeoutMs` and `signal` bound each.
   */
  group(
    build: (group: Group) => void | Promise<void>,
    options: Pick<CallOptions, 'timeoutMs' | 'signal'> = {},
  ): Promise<void> {
    return runGroup(this, build, {
      ...options,
      check: debugCheck,
      name: this.name,
      defaultTimeoutMs: this.defaultTimeoutMs,
    });
  }

  /**
   * What `group(build)` would run and cost, without communicating: its fused buckets and other
   * collectives, each priced as `predict` prices a call (sends and receives are counted, not priced).
   */
  predictGroup(build: (group: Group) => void | Promise<void>): Promise<GroupPrediction> {
    return priceGroup(this, build);
  }

  /**
   * Splits this communicator into groups by color, ordered by key, as MPI_Comm_split and
   * ncclCommSplit do. Collective: every rank must call it. Ranks with no color get null.
   */
  async split(options: SplitOptions): Promise<Communicator | null> {
    this.failures.ensureUsable();
    const call = checkOptions('split', options, this.where);
    const { color } = options;
    if (color === undefined) {
      throw invalidArgument(`Rank ${this.rank}: split color must be an integer or null, got undefined`, {
        rank: this.rank,
        argument: 'color',
      });
    }
    const key = options.key ?? this.rank;
    const joins = color !== null && color >= 0;
    const contribution = this.backend.prepareSplit(joins);
    const mine = new Float64Array([joins ? color : -1, key, contribution]);
    const everyone = new Float64Array(3 * this.size);
    const index = this.splits++;
    await this.start('split', options, mine, () => ({
      ...this.plans.plan({
        collective: 'allGather',
        dtype: dtypeInfo('float64'),
        op: undefined,
        count: 3,
        root: 0,
        input: mine,
        output: everyone,
        algorithm: undefined,
        compression: undefined,
        variable: undefined,
      }),
      label: 'split',
    }));
    if (!joins) {
      this.backend.abandonSplit(contribution);
      return null;
    }
    const members = Array.from({ length: this.size }, (_, r) => r)
      .filter((r) => everyone[3 * r] === color)
      .sort((a, b) => everyone[3 * a + 1] - everyone[3 * b + 1] || a - b);
    const name = childName(this.name, `split${index}.color${color}`);
    const backend = await this.backend.completeSplit({
      members,
      contributions: members.map((r) => everyone[3 * r + 2]),
      rank: members.indexOf(this.rank),
      name,
      timeoutMs: call.timeoutMs,
    });
    return new Communicator({ arena: this.arena, backend, name, defaultTimeoutMs: this.defaultTimeoutMs });
  }

  /**
   * A communicator of the same ranks on fresh mailboxes or links, met as shrink meets its
   * survivors: no call of this one, whose numbering and records stay as they were. For the
   * library's own calls (init's warm-up, a progress engine's hand-off measure); every rank makes
   * its siblings in the same order with the same labels.
   */
  async sibling(label: string, options: { timeoutMs?: number } = {}): Promise<Communicator> {
    const name = childName(this.name, label);
    const backend = await this.backend.shrink({
      survivors: this.allRanks,
      // Shrinks count up from 1, siblings down from -1: no meeting answers another's offers.
      epoch: -++this.siblings,
      name,
      timeoutMs: options.timeoutMs ?? this.defaultTimeoutMs,
      signal: undefined,
      sibling: true,
    });
    return new Communicator({
      arena: this.arena,
      backend,
      name,
      defaultTimeoutMs: this.defaultTimeoutMs,
      logsCalls: false,
    });
  }

  /** Waits for pending calls, then retires the communicator; later calls fail with TSCCL_ERR_DESTROYED. */
  async destroy(): Promise<void> {
    if (this.failures.destroyed) return;
    this.failures.destroyed = true;
    await Promise.allSettled([this.queue.drained(), this.p2p.drained()]);
    // The memos hold the last call's buffers; let them go with the communicator.
    this.plans.forget();
    this.lastCall.forget();
    this.recordedPlan = undefined;
    this.reductionRequest.input = new Float32Array(0);
    this.reductionRequest.output = undefined;
    this.lastPrepared = undefined;
    this.recipes.clear();
    this.recorder.retire();
    await this.backend.close();
    // Staging space goes back to the arena. Not after a failed call: a peer may still be reading
    // what this rank staged for it. The mailbox is the backend's: reused once every member closed.
    this.workspaces.release(this.failures.failure !== undefined);
  }

  /**
   * Ends every pending call of this communicator on this rank now (TSCCL_ERR_ABORTED) and tells
   * the peers, whose pending and later calls fail naming this rank. Never blocks.
   */
  abort(reason = 'aborted by the application'): void {
    this.failures.abort(reason, this.seq);
  }

  /**
   * A working communicator of the ranks not excluded (ncclCommShrink, MPIX_Comm_shrink): works
   * on a failed or aborted communicator, needs only the survivors, and numbers them in order.
   */
  async shrink(options: ShrinkOptions): Promise<Communicator> {
    if (this.failures.destroyed) throw this.failures.destroyedError();
    const call = checkOptions('shrink', options, this.where);
    const exclude = options.exclude;
    if (!Array.isArray(exclude) || exclude.some((r) => !Number.isInteger(r) || r < 0 || r >= this.size)) {
      throw invalidArgument(`Rank ${this.rank}: shrink needs exclude, a list of ranks in [0, ${this.size - 1}]`, {
        rank: this.rank,
        argument: 'exclude',
      });
    }
    if (exclude.includes(this.rank))
      throw invalidArgument(`Rank ${this.rank} cannot shrink a communicator it excludes itself from`, {
        rank: this.rank,
        argument: 'exclude',
      });
    const survivors = Array.from({ length: this.size }, (_, r) => r).filter((r) => !exclude.includes(r));
    const epoch = ++this.shrinks;
    const name = childName(this.name, `shrink${epoch}`);
    const backend = await this.backend.shrink({
      survivors,
      epoch,
      name,
      timeoutMs: call.timeoutMs,
      signal: call.signal,
    });
    return new Communicator({ arena: this.arena, backend, name, defaultTimeoutMs: this.defaultTimeoutMs });
  }

  /** A call's wire format: its compression option, else TSCCL_COMPRESSION where the call can take it. */
  private compressionFor(
    options: CollectiveOptions & { op?: unknown },
    dtype: DTypeInfo,
    reduces: boolean,
  ): CompressionSpec | undefined {
    const option = options.compression;
    if (option === 'none') return undefined;
    if (option !== undefined)
      return parseCompression(option, { rank: this.rank, defaultShadow: compressionShadowDefault });
    // The job's default compresses sums and averages only: a broadcast or all-gather (parameters,
    // activations) compresses where the call asks, as its error is not averaged away.
    const job = compressionDefault;
    const summing = reduces && (options.op === undefined || options.op === 'sum' || options.op === 'avg');
    return job !== undefined && isCompressible(dtype) && summing && options.algorithm === undefined ? job : undefined;
  }

  /** The call's buffer, checked, and its dtype. */
  private typed(buffer: TypedArray, dtype: DType | undefined): { input: TypedArray; dtype: DTypeInfo } {
    const input = checkTypedArray(buffer, 'buffer', this.rank);
    return { input, dtype: resolveDType(input, dtype, 'buffer', this.rank) };
  }

  private blockCount(buffer: TypedArray, op: string): number {
    if (buffer.length % this.size !== 0) {
      throw invalidArgument(
        `Rank ${this.rank}: ${op} buffer of ${buffer.length} elements does not split into ${this.size} equal blocks`,
        { rank: this.rank, argument: 'buffer', op },
      );
    }
    return buffer.length / this.size;
  }

  /**
   * Checks options and arguments now (so bad input never blocks a peer), then queues the call on
   * this communicator. `makePlan` is a method (called on this communicator), not a closure: a
   * closure per call is garbage on every small call.
   */
  private start<O extends CallOptions>(
    name: OptionsCall,
    options: O,
    buffer: TypedArray,
    makePlan: (this: Communicator, buffer: TypedArray, options: O) => CallPlan,
  ): Promise<void> {
    try {
      this.failures.ensureUsable();
      const repeated = this.lastCall.repeated(name, buffer, options);
      if (repeated !== undefined) return this.enqueuePlan(repeated.plan, repeated.settings);
      const call = checkOptions(name, options, this.where);
      const plan = makePlan.call(this, buffer, options);
      // Refused calls take no sequence number: every check that can refuse one (checkOptions refuses
      // an already aborted signal) runs before it.
      if (plan.algorithm !== undefined)
        checkSelectable(plan.collective, plan.algorithm, { argument: 'algorithm', op: name });
      if (plan.compression?.shadow) return this.shadowed(plan, call);
      this.lastCall.keep(name, buffer, options, call, plan);
      return this.enqueuePlan(plan, call);
    } catch (err) {
      return Promise.reject(err);
    }
  }

  /** Numbers, records and queues a checked plan; `numbered` is told its record and number. */
  private enqueuePlan(
    plan: CallPlan,
    call: CallSettings,
    numbered?: { record?: LiveRecord; seq?: number },
  ): Promise<void> {
    const seq = ++this.seq;
    const entry = this.recordEntry;
    entry.seq = seq;
    if (this.recordedPlan !== plan) {
      entry.op = plan.label;
      entry.dtype = plan.dtype.name;
      entry.count = plan.shape.count;
      entry.root = plan.shape.root;
      entry.redop = REDUCING_COLLECTIVES.has(plan.collective) ? plan.op : 'none';
      this.recordedPlan = plan;
    }
    const record = this.recorder.record(entry);
    const guard = debugCheck ? this.guardInput(plan, seq) : undefined;
    if (numbered !== undefined) {
      numbered.record = record;
      numbered.seq = seq;
    }
    // An idle queue starts the call without a closure: a stream of small calls makes less garbage.
    if (this.queue.idle) {
      this.queue.beginNow();
      record.startedAt = record.queuedAt;
      return this.queue.begun(this.runCollective(plan, seq, record, call, guard));
    }
    return this.enqueueLater(plan, seq, record, call, guard);
  }

  /** A call behind others on the queue; a method of its own, so that enqueuePlan makes no closure. */
  private enqueueLater(
    plan: CallPlan,
    seq: number,
    record: LiveRecord,
    call: CallSettings,
    guard: InFlightGuard | undefined,
  ): Promise<void> {
    return this.queue.enqueue(() => this.runCollective(plan, seq, record, call, guard));
  }

  /**
   * A compressed call in shadow mode: the same call uncompressed into a scratch array first (it
   * reads the input before the compressed call may overwrite it), then the compressed one, and
   * the difference reported (compressionReports, the flight record, TSCCL_DEBUG=INFO).
   */
  private shadowed(plan: CallPlan, call: CallSettings): Promise<void> {
    const views = callViews(plan.shape, this.rank, { user: plan.input!, output: plan.output });
    const exactOutput = new plan.dtype.ctor(bufferCounts(plan.shape, this.rank).output);
    const exactPlan = this.plans.planUncached({
      collective: plan.collective,
      dtype: plan.dtype,
      op: plan.op,
      count: plan.shape.count,
      root: plan.shape.root,
      input: views.input,
      output: exactOutput,
      algorithm: undefined,
      compression: undefined,
      variable: undefined,
    });
    const exact = this.enqueuePlan(exactPlan, call);
    const compressed: { record?: LiveRecord; seq?: number } = {};
    const done = this.enqueuePlan(plan, call, compressed);
    return settleAll([exact, done]).then(() => {
      if (exactOutput.length === 0) return;
      const report: CompressionReport = {
        seq: compressed.seq!,
        op: plan.label,
        compression: compressionLabel(plan.compression!),
        ...compareResults(plan.dtype, views.output.subarray(0, exactOutput.length) as TypedArray, exactOutput),
      };
      compressed.record!.shadowError = report.relativeError;
      this.reports.push(report);
      if (this.reports.length > MAX_REPORTS) this.reports.shift();
      log(
        'INFO',
        () =>
          `${this.name} rank ${this.rank}: ${plan.label} #${report.seq} ${report.compression} shadow: max error ${report.maxAbsError.toExponential(3)} (${report.relativeError.toExponential(3)} of the largest exact value), ${report.nonFinite} non-finite mismatches`,
      );
    });
  }

  /** What shadowed compressed calls measured on this rank, oldest first (the last 64). */
  compressionReports(): CompressionReport[] {
    return [...this.reports];
  }

  /**
   * The watch TSCCL_DEBUG_CHECK keeps on a call's input (none for a call without one). Calls
   * queued before it may write its input (a second in-place all-reduce of the same array), so
   * its input is compared at its start only where none of them writes there.
   */
  private guardInput(plan: CallPlan, seq: number): InFlightGuard | undefined {
    const { input, output } = plan;
    if (input === undefined || input.byteLength === 0) return undefined;
    const overlapping = (a: TypedArray, b: TypedArray) =>
      bytesOverlap(a.buffer, a.byteOffset, a.byteOffset + a.byteLength, b);
    const readOnly = output !== undefined && !overlapping(output, input);
    const writtenBefore = [...this.queuedWrites].some(({ written }) => overlapping(written, input));
    // Its own entry: two queued calls may write the same array, and the first to end must not remove the other's.
    const entry = { written: output ?? input };
    this.queuedWrites.add(entry);
    return new InFlightGuard(input, {
      rank: this.rank,
      op: plan.label,
      seq,
      readOnly,
      checkAtStart: !writtenBefore,
      release: () => this.queuedWrites.delete(entry),
    });
  }

  /** Runs a call; DONE when it finished without waiting. */
  private runCollective(
    plan: CallPlan,
    seq: number,
    record: LiveRecord,
    call: CallSettings,
    guard: InFlightGuard | undefined,
  ): Promise<void> {
    record.state = 'running';
    // A call begun as it was queued started then: one clock read less on a small call's path.
    const startedAt = Number.isNaN(record.startedAt) ? epochMs() : record.startedAt;
    record.startedAt = startedAt;
    let pending: Promise<void> | undefined;
    let ctx: OpContext;
    try {
      this.failures.ensureUsable();
      ctx = this.collectiveContext(plan, seq, call.timeoutMs, call.signal, startedAt);
      guard?.started();
      const saved =
        saveInputForRetry && opRetries > 0 && this.backend.rebuild !== undefined ? savedInput(plan) : undefined;
      pending = this.execute(plan, seq, ctx, record, call.checksum ?? checksumDefault);
      if (pending !== undefined) return this.endLater(pending, ctx, guard, record, seq, plan, call, saved);
      ctx.endReads();
      guard?.ended();
    } catch (err) {
      guard?.failed();
      return Promise.reject(this.ended(record, seq, err));
    }
    this.ended(record, seq, undefined);
    this.spareContext = ctx;
    return DONE;
  }

  /**
   * The wait context of collective `seq`, over every rank of the communicator: the last one that
   * ended well, renewed, if there is one (a context per call was a third of a small call's garbage).
   */
  private collectiveContext(
    plan: CallPlan,
    seq: number,
    timeoutMs: number,
    signal: AbortSignal | undefined,
    startedAt: number,
  ): OpContext {
    const spare = this.spareContext;
    if (spare !== undefined) {
      this.spareContext = undefined;
      return spare.renew(plan.label, seq, timeoutMs, signal, startedAt);
    }
    return new OpContext(this.scope, {
      op: plan.label,
      seq,
      timeoutMs,
      signal,
      collective: true,
      participants: this.allRanks,
      startedAt,
    });
  }

  /**
   * runCollective's end of a call that waited; a method of its own, so that a call that finished
   * at once makes none of these closures (and no context for them).
   */
  private endLater(
    pending: Promise<void>,
    ctx: OpContext,
    guard: InFlightGuard | undefined,
    record: LiveRecord,
    seq: number,
    plan: CallPlan,
    call: CallSettings,
    saved: Uint8Array | undefined,
  ): Promise<void> {
    return pending.then(
      () => {
        try {
          ctx.endReads();
        } catch (err) {
          return this.failed(plan, seq, record, call, guard, saved, err);
        }
        try {
          guard?.ended();
        } catch (err) {
          throw this.ended(record, seq, err);
        }
        this.ended(record, seq, undefined);
        this.spareContext = ctx;
      },
      (err: unknown) => this.failed(plan, seq, record, call, guard, saved, err),
    );
  }

  /** Call `seq` failed with `err`: run again where that may mend it (runAgain), else closed as failed. */
  private failed(
    plan: CallPlan,
    seq: number,
    record: LiveRecord,
    call: CallSettings,
    guard: InFlightGuard | undefined,
    saved: Uint8Array | undefined,
    err: unknown,
  ): Promise<void> {
    if (opRetries > 0 && this.backend.rebuild !== undefined && mendable(err))
      return this.runAgain(plan, seq, record, call, guard, saved, err);
    guard?.failed();
    throw this.ended(record, seq, err);
  }

  /**
   * Operation retry (operation-retry.ts): call `seq` failed on a link with `err`. The peers hear
   * of it at once, so that their calls end too; then every rank says whether it can run the call
   * again, and if every one can, they do, from its input (restored from `saved` where the call
   * overwrote it), over new connections, up to TSCCL_OP_RETRIES times. Otherwise the call fails
   * as it would have, saying why it was not run again.
   */
  private async runAgain(
    plan: CallPlan,
    seq: number,
    record: LiveRecord,
    call: CallSettings,
    guard: InFlightGuard | undefined,
    saved: Uint8Array | undefined,
    failure: TscclError,
  ): Promise<void> {
    let err = failure;
    for (let attempt = 1; ; attempt++) {
      this.failures.fail(err, seq);
      const leftMs = call.timeoutMs - (epochMs() - record.startedAt);
      const outcome = await this.backend.rebuild!({
        name: childName(this.name, `retry${++this.meetings}`),
        seq,
        veto:
          attempt > opRetries
            ? `it ran the call ${attempt} times (TSCCL_OP_RETRIES=${opRetries})`
            : retryVeto(plan, err, { saved: saved !== undefined, pointToPointBusy: this.p2p.busy, leftMs }),
        timeoutMs: Math.max(1, leftMs),
        signal: call.signal,
      });
      if ('refused' in outcome) {
        guard?.failed();
        throw this.ended(record, seq, notRunAgain(err, outcome.refused));
      }
      this.replaceBackend(outcome.backend);
      if (saved !== undefined) restoreInput(plan, saved);
      this.retries++;
      record.retries = attempt;
      log(
        'INFO',
        () =>
          `${this.name} rank ${this.rank}: ${plan.label} #${seq} failed (${err.code}: ${err.message}); every rank agreed to run it again over new connections (${attempt} of TSCCL_OP_RETRIES=${opRetries})`,
      );
      try {
        const ctx = this.collectiveContext(plan, seq, Math.max(1, leftMs), call.signal, epochMs());
        await this.execute(plan, seq, ctx, record, call.checksum ?? checksumDefault);
        ctx.endReads();
      } catch (again) {
        if (!mendable(again)) {
          guard?.failed();
          throw this.ended(record, seq, again);
        }
        err = again;
        continue;
      }
      guard?.ended();
      this.ended(record, seq, undefined);
      return;
    }
  }

  /**
   * Goes on over `backend` (a failed call's new connections): the old one closes, what its links
   * recovered from stays counted, and nothing prepared for it is reused.
   */
  private replaceBackend(backend: CommBackend): void {
    const old = this.backend;
    this.pastRecoveries = addRecoveries(this.pastRecoveries, old.transport.recoveries?.() ?? []);
    this.backend = backend;
    this.scope.backend = backend;
    this.site = selectionSite(backend, this.size);
    this.lastPrepared = undefined;
    this.recipes.clear();
    this.lastCompressed = undefined;
    this.failures.recovered();
    old.close().catch(() => undefined);
  }

  /** Closes a call's record (and retires the communicator if it failed); returns the error to throw. */
  private ended(record: LiveRecord, seq: number, err: unknown): unknown {
    record.endedAt = epochMs();
    this.queue.ended();
    if (err === undefined) {
      record.state = 'done';
      this.backend.status.end(seq);
      return undefined;
    }
    record.state = 'failed';
    record.error = err instanceof TscclError ? err.code : String(err);
    return this.failures.fail(err, seq);
  }

  /** Runs the call on this rank: undefined if it finished without waiting, else a promise. */
  private execute(
    plan: CallPlan,
    seq: number,
    ctx: OpContext,
    record: LiveRecord,
    checksum: boolean | undefined,
  ): Promise<void> | undefined {
    if (plan.compression !== undefined)
      return this.executeCompressed(plan, plan.compression, seq, ctx, record, checksum);
    const prepared = this.preparedFor(plan, checksum);
    const { selection, scale, oneShot } = prepared;
    record.algorithm = selection.algorithm;
    // The level first: siblings, which do not log, then warm the same test the world's calls make.
    if (logs('INFO') && this.logsCalls) this.logCall(plan, seq, prepared);
    this.backend.status.enter(seq);
    if (prepared.local !== undefined) {
      prepared.local.run();
      return undefined;
    }
    if (oneShot !== undefined) {
      const averaged = scale ? plan.dtype.name : undefined;
      const pending = oneShot.run(seq, ctx);
      if (pending !== undefined) return this.oneShotEndedAfter(pending, oneShot, seq, ctx, averaged);
      this.oneShotEnded(oneShot, seq, ctx, averaged);
      return undefined;
    }
    return this.runSchedule(plan, seq, ctx, prepared, checksum);
  }

  /** What `plan` runs with: the last call's, a recent call's of its shape on these arrays, or chosen afresh. */
  private preparedFor(plan: CallPlan, checksum: boolean | undefined): PreparedCall {
    const last = this.lastPrepared;
    if (last !== undefined && last.plan === plan && last.checksum === checksum) return last;
    const on = { rank: this.rank, backend: this.backend };
    const rebound = this.recipes.rebind(plan, checksum, on);
    if (rebound !== undefined) return (this.lastPrepared = rebound);
    const prepared = prepareCall(plan, { ...on, arena: this.arena, site: this.site, checksum });
    this.recipes.keep(prepared);
    return (this.lastPrepared = prepared);
  }

  /**
   * The closures of execute's rarer paths live in methods of their own: a closure in execute
   * would make V8 allocate a context for its variables on every call, the small calls included.
   */
  private logCall(plan: CallPlan, seq: number, prepared: PreparedCall): void {
    const { bytes, selection } = prepared;
    log(
      'INFO',
      () =>
        `${this.name} rank ${this.rank}: ${plan.label} #${seq} ${bytes} B ${plan.dtype.name} -> ${selection.algorithm} (${selection.protocol}, chunk ${selection.chunkCount} elements)`,
    );
  }

  private oneShotEndedAfter(
    pending: Promise<void>,
    oneShot: OneShotCall,
    seq: number,
    ctx: OpContext,
    averaged: DType | undefined,
  ): Promise<void> {
    return pending.then(() => this.oneShotEnded(oneShot, seq, ctx, averaged));
  }

  /** Runs a call's schedule on this rank (execute's path for calls that are not one-shot). */
  private async runSchedule(
    plan: CallPlan,
    seq: number,
    ctx: OpContext,
    prepared: PreparedCall,
    checksum: boolean | undefined,
  ): Promise<void> {
    const { kernel, opcode, scale, schedule } = prepared;
    const { dtype } = plan;
    if (debugCheck) {
      await this.checkSameCall(plan, seq, ctx);
    }
    const buffers = stageCall(plan, {
      rank: this.rank,
      arena: this.arena,
      sharesMemory: this.backend.sharesMemory,
      workspaces: this.workspaces,
      scratchCount: schedule!.scratchCount,
    });
    await executeSchedule({
      schedule: schedule!,
      buffers: buffers.exec,
      dtype,
      kernel,
      transport: this.backend.transport,
      tag: { seq, opcode, checksum },
      ctx,
      channelBase: 0,
    });
    if (scale) arenaKernels(this.arena).scale(dtype.name)(buffers.exec.output, this.size);
    buffers.copyBack();
  }

  /** After a one-shot call's messages were combined: what endReads must check, and an average's scaling (of `averaged`). */
  private oneShotEnded(oneShot: OneShotCall, seq: number, ctx: OpContext, averaged: DType | undefined): void {
    if (!oneShot.readPeerMemory(seq)) ctx.readNoPeerMemory();
    if (averaged !== undefined) arenaKernels(this.arena).scale(averaged)(oneShot.output, this.size);
  }

  /** Runs a compressed call (compressed-call): its own byte schedules, under the call's sequence number. */
  private async executeCompressed(
    plan: CallPlan,
    spec: CompressionSpec,
    seq: number,
    ctx: OpContext,
    record: LiveRecord,
    checksum: boolean | undefined,
  ): Promise<void> {
    const last = this.lastCompressed;
    const call =
      last !== undefined && last.plan === plan
        ? last.call
        : new CompressedCall(plan, spec, {
            rank: this.rank,
            size: this.size,
            hosts: this.backend.hosts,
            workspaces: this.workspaces,
            transport: this.backend.transport,
            site: this.site,
            sumKernel: arenaKernels(this.arena).reduce('float32', 'sum'),
            simd: arenaKernels(this.arena).codecs,
            // Error feedback keeps a residual per input value, which the flat schedule encodes.
            hierarchy: spec.residual === undefined ? compressionHierarchy(this.backend.hosts, this.rank) : undefined,
          });
    this.lastCompressed = { plan, call };
    record.algorithm = call.algorithms;
    record.compression = compressionLabel(spec);
    record.wireBytes = call.encodedBytes;
    log(
      'INFO',
      () =>
        `${this.name} rank ${this.rank}: ${plan.label} #${seq} ${plan.shape.count} ${plan.dtype.name} compressed ${call.algorithms}, ${call.encodedBytes} B encoded`,
    );
    this.backend.status.enter(seq);
    if (debugCheck) {
      await this.checkSameCall(plan, seq, ctx);
    }
    await call.run(seq, ctx, checksum);
  }

  /** TSCCL_DEBUG_CHECK: the ranks compare the call before running it. */
  private checkSameCall(plan: CallPlan, seq: number, ctx: OpContext): Promise<void> {
    return checkSameCall(plan, {
      seq,
      ctx,
      rank: this.rank,
      name: this.name,
      transport: this.backend.transport,
      workspaces: this.workspaces,
    });
  }
}
