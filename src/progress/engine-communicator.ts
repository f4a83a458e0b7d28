import { Worker } from 'node:worker_threads';
import type { CommStats } from '../comm/comm-stats.js';
import type { Communicator } from '../comm/communicator.js';
import {
  type AllToAllOptions,
  type CallOptions,
  type CollectiveOptions,
  type OptionsCall,
  type PredictOptions,
  type ReduceOptions,
  type RootedOptions,
  type RootedReduceOptions,
  type ShrinkOptions,
  type SplitOptions,
  checkOptions,
} from '../comm/call-options.js';
import { debugCheck } from '../comm/call-defaults.js';
import { type Group, type GroupPrediction, priceGroup, runGroup } from '../comm/call-group.js';
import { registerCompletionProbe, shareCompletionProbe } from '../comm/work.js';
import { allocArray, freeArray } from '../comm/arena-arrays.js';
import { allocatedDTypes, checkTypedArray } from '../comm/validate.js';
import { type CommRecord, forwardDumps, installSignalDump } from '../debug/flight-recorder.js';
import type { DType, DTypeArrayMap, TypedArray } from '../dtypes/dtype.js';
import { ErrorCode, TscclError, invalidArgument, reviveError } from '../errors.js';
import { threadRankBootstrap } from '../job/bootstrap.js';
import { rankResourceLimits } from '../job/rank-heap.js';
import { crc32 } from '../kernels/crc32.js';
import { Arena } from '../memory/arena.js';
import { type LiveTransport, forgetLive, registerLive } from '../transport/tcp/live-transports.js';
import type { Prediction } from '../tuner/predict.js';
import { callSizeBytes, runsInline } from '../tuner/progress-choice.js';
import { CallLanes } from './call-lanes.js';
import { type InlineTwin, openInlineTwin, twinSupported } from './inline-twin.js';
import {
  type ArenaBuffer,
  type EngineCall,
  type EngineCommInfo,
  type FromEngine,
  TYPED_ARRAY_NAMES,
  type ToEngine,
  type TypedArrayName,
} from './engine-protocol.js';
import { type EngineData, completionFlags, isFinished, readReply, replyBuffer } from './engine-reply.js';

/** How long a query of the engine's local state may take before it counts as lost. */
const QUERY_TIMEOUT_MS = 30_000;
/** How long an exiting process waits for its engine to tell the peers: past it, they learn from the broken sockets. */
const EXIT_ANNOUNCE_MS = 2000;

interface Pending {
  readonly resolve: (comm: EngineCommInfo | null | undefined) => void;
  readonly reject: (err: Error) => void;
  /** Runs on completion before the call resolves: copies staged results back to the caller's arrays. */
  readonly finish?: () => void;
  /** Staged copies of the call: after a failure a peer may still read them, so they are never reused. */
  readonly staged?: readonly TypedArray[];
}

/** One rank's engine thread and the calls it holds for the rank. */
class Engine implements LiveTransport {
  readonly worker: Worker;
  readonly reply = replyBuffer();
  /** Questions asked in the reply block so far: the next one's number is one more. */
  private questions = 0;
  readonly completions = completionFlags();
  private readonly flags = new Int32Array(this.completions);
  arena!: Arena;
  private nextCall = 0;
  private readonly pending = new Map<number, Pending>();
  /** Communicators of this rank the engine holds and that were not destroyed. */
  live = 0;
  private failure: Error | undefined;
  private stopForwarding: () => unknown = () => undefined;
  /** Staged arrays of failed calls, kept from the arena's reuse. */
  private readonly retained: TypedArray[] = [];

  constructor(defaultTimeoutMs: number) {
    const data: EngineData = {
      tsccl: threadRankBootstrap(),
      engine: { defaultTimeoutMs, reply: this.reply, completions: this.completions },
    };
    this.worker = new Worker(new URL('./engine-worker.js', import.meta.url), {
      workerData: data,
      resourceLimits: rankResourceLimits(),
    });
    this.worker.on('error', (err) => this.failAll(err));
    this.worker.on('exit', (code) =>
      this.failAll(new TscclError(ErrorCode.INTERNAL, `progress engine exited (${code})`)),
    );
  }

  /** Resolves with the world once the engine has joined it. */
  started(): Promise<EngineCommInfo> {
    return new Promise((resolve, reject) => {
      const first = (message: FromEngine) => {
        this.worker.off('message', first);
        if (message.kind === 'ready') {
          this.arena = Arena.attach(message.memory);
          this.worker.on('message', (m: FromEngine) => this.settle(m));
          this.live = 1;
          this.stopForwarding = forwardDumps((reason) => this.post({ kind: 'dump', reason }));
          // The engine's sockets leave with the rank: politely when its script ends, at once when its process exits.
          registerLive(this);
          installSignalDump();
          this.idle();
          resolve(message.world);
        } else {
          void this.worker.terminate();
          reject(message.kind === 'startFailed' ? reviveError(message.error) : new Error(`unexpected ${message.kind}`));
        }
      };
      this.worker.on('message', first);
    });
  }

  /** Posts a call; the promise settles when the engine has finished it. */
  call(
    message: Omit<Extract<ToEngine, { kind: 'call' }>, 'kind' | 'id'>,
    options: { signal?: AbortSignal; finish?: () => void; staged?: readonly TypedArray[] },
  ) {
    if (this.failure !== undefined) return Promise.reject(this.failure);
    const id = this.nextCall++;
    const call = new Promise<EngineCommInfo | null | undefined>((resolve, reject) => {
      const { signal, finish, staged } = options;
      const onAbort = () =>
        this.worker.postMessage({
          kind: 'abortCall',
          id,
          reason: String(signal?.reason ?? 'aborted'),
        } satisfies ToEngine);
      signal?.addEventListener('abort', onAbort, { once: true });
      const done = () => signal?.removeEventListener('abort', onAbort);
      this.pending.set(id, {
        resolve: (value) => {
          done();
          resolve(value);
        },
        reject: (err) => {
          done();
          reject(err);
        },
        finish,
        staged,
      });
      // A call in flight keeps the process alive, as a socket would; an idle engine does not.
      if (this.pending.size === 1) this.worker.ref();
      this.worker.postMessage({ kind: 'call', id, ...message } satisfies ToEngine);
    });
    // A staged result is the caller's only once copied back, on this thread: then the promise says.
    if (options.finish === undefined) registerCompletionProbe(call, () => isFinished(this.flags, id));
    return call;
  }

  post(message: ToEngine): void {
    this.worker.postMessage(message);
  }

  /** Says goodbye on every socket the engine holds (the rank's script ended). */
  async close(): Promise<void> {
    if (this.failure !== undefined) return;
    const id = this.nextCall++;
    await new Promise<unknown>((resolve, reject) => {
      this.pending.set(id, { resolve, reject });
      this.worker.ref();
      this.worker.postMessage({ kind: 'leave', id } satisfies ToEngine);
    });
  }

  /** The process is exiting: the engine tells its peers how far this rank got before the thread is gone. */
  announceExit(): void {
    if (this.failure !== undefined) return;
    const reply = ++this.questions;
    this.worker.postMessage({ kind: 'announceExit', reply } satisfies ToEngine);
    readReply(this.reply, reply, EXIT_ANNOUNCE_MS);
  }

  /** Asks the engine about a communicator's local state and waits for the answer (it never communicates). */
  query(message: Omit<Extract<ToEngine, { kind: 'query' }>, 'kind' | 'reply'>): unknown {
    const reply = ++this.questions;
    this.worker.postMessage({ kind: 'query', reply, ...message } satisfies ToEngine);
    const answer = readReply(this.reply, reply, QUERY_TIMEOUT_MS) as { value?: unknown; error?: unknown } | undefined;
    if (answer === undefined)
      throw new TscclError(
        ErrorCode.INTERNAL,
        `progress engine did not answer ${message.what} within ${QUERY_TIMEOUT_MS} ms`,
      );
    if (answer.error !== undefined) throw reviveError(answer.error);
    return answer.value;
  }

  private settle(message: FromEngine): void {
    if (message.kind !== 'done' && message.kind !== 'failed') return;
    const pending = this.pending.get(message.id);
    if (pending === undefined) return;
    this.pending.delete(message.id);
    this.idle();
    if (message.kind === 'failed') {
      this.retained.push(...(pending.staged ?? []));
      pending.reject(reviveError(message.error));
      return;
    }
    try {
      pending.finish?.();
    } catch (err) {
      pending.reject(err as Error);
      return;
    }
    pending.resolve(message.comm);
  }

  private idle(): void {
    if (this.pending.size === 0) this.worker.unref();
  }

  private failAll(err: Error): void {
    this.failure ??= err;
    for (const pending of this.pending.values()) pending.reject(this.failure);
    this.pending.clear();
  }

  /** The rank's last communicator of this engine is gone: the thread ends. */
  retire(): void {
    if (--this.live > 0) return;
    this.stopForwarding();
    forgetLive(this);
    void this.worker.terminate();
  }
}

/** A call's promise without its value, finishing (for Work.track) when the call does. */
function settled(call: Promise<unknown>): Promise<void> {
  const done = call.then(() => undefined);
  shareCompletionProbe(call, done);
  return done;
}

/** A call's arrays that are not in the arena: their arena copies, and what completion does with them. */
interface Staging {
  readonly call: string;
  readonly copies: (() => void)[];
  readonly staged: TypedArray[];
}

const bytesOf = (v: TypedArray) => new Uint8Array(v.buffer, v.byteOffset, v.byteLength);

function typedArrayName(array: TypedArray): TypedArrayName {
  const name = array.constructor.name as TypedArrayName;
  return (TYPED_ARRAY_NAMES as readonly string[]).includes(name) ? name : 'Uint8Array';
}

/**
 * A communicator whose calls a progress engine runs: the same calls, options and errors as a
 * Communicator's, but a call moves while this thread computes, and its promise settles when
 * this thread's event loop next runs. Arrays from `alloc` go to the engine in place; any other
 * array is copied into the arena when the call is issued and its result copied back when it
 * completes (one copy each way).
 */
export class EngineCommunicator {
  readonly rank: number;
  readonly size: number;
  readonly name: string;
  /**
   * 'engine': every call runs on the rank's progress engine, a thread of the library; 'auto':
   * calls too short for the engine's hand-off to pay run on the rank's own thread, the tuner's
   * choice per call (progressOf).
   */
  readonly progress: 'engine' | 'auto';
  readonly transportKind: 'shm' | 'tcp';
  /** The largest all-reduce `group` fuses with others, as the engine's communicator has it. */
  readonly groupFusionMaxBytes: number;
  private readonly engine: Engine;
  private readonly comm: number;
  private readonly defaultTimeoutMs: number;
  private destroyed = false;
  /** The rank's own communicator beside the engine's, for calls run inline ('auto' on thread ranks). */
  private twin: InlineTwin | undefined;
  private readonly lanes = new CallLanes();

  private constructor(engine: Engine, info: EngineCommInfo, defaultTimeoutMs: number, progress: 'engine' | 'auto') {
    this.engine = engine;
    this.progress = progress;
    this.comm = info.comm;
    this.rank = info.rank;
    this.size = info.size;
    this.name = info.name;
    this.transportKind = info.transportKind;
    this.groupFusionMaxBytes = info.groupFusionMaxBytes;
    this.defaultTimeoutMs = defaultTimeoutMs;
  }

  /** Starts this rank's engine, which joins the world as this rank. */
  static async start(defaultTimeoutMs: number, progress: 'engine' | 'auto' = 'engine'): Promise<EngineCommunicator> {
    const engine = new Engine(defaultTimeoutMs);
    return EngineCommunicator.opened(engine, await engine.started(), defaultTimeoutMs, progress, undefined);
  }

  /**
   * A communicator the engine made, with its inline twin where 'auto' can have one: the world's
   * measures the hand-off; a split's or shrink's takes `parent`'s, and on process ranks is the
   * parent twin's own split or shrink (`mirrored`).
   */
  private static async opened(
    engine: Engine,
    info: EngineCommInfo,
    defaultTimeoutMs: number,
    progress: 'engine' | 'auto',
    parent: { readonly handOffUs: number; readonly mirrored: Communicator | undefined } | undefined,
  ): Promise<EngineCommunicator> {
    const comm = new EngineCommunicator(engine, info, defaultTimeoutMs, progress);
    if (progress !== 'auto' || comm.size === 1 || !twinSupported(info.transportKind)) {
      // A mirrored twin alone in its group has nothing to run.
      await parent?.mirrored?.destroy();
    } else {
      comm.twin = await openInlineTwin(
        {
          rank: comm.rank,
          size: comm.size,
          name: comm.name,
          arena: engine.arena,
          defaultTimeoutMs,
          transportKind: info.transportKind,
          siblingOnEngine: async (label) => {
            const sibling = await comm.issue('sibling', { options: { label } });
            engine.live++;
            return EngineCommunicator.opened(engine, sibling!, defaultTimeoutMs, 'engine', undefined);
          },
        },
        parent,
      );
    }
    return comm;
  }

  /**
   * Where a call of `bytes` (an all-gather's whole output) would run: on this rank's thread or
   * on its engine. The same on every rank of the communicator.
   */
  progressOf(collective: string, bytes: number): 'inline' | 'engine' {
    return this.twin !== undefined && runsInline(this.twin.engineMinBytes, collective, bytes) ? 'inline' : 'engine';
  }

  /** What the engine adds to a call, us, as 'auto' priced it (undefined where every call runs on the engine). */
  get handOffUs(): number | undefined {
    return this.twin?.handOffUs;
  }

  /** A typed array in the shared arena: the engine reads and writes it in place, with no copy. */
  alloc<D extends DType>(dtype: D, count: number): DTypeArrayMap[D] {
    return allocArray(this.engine.arena, dtype, count, this.rank);
  }

  /** Returns an array from `alloc` once every call that uses it has resolved. */
  free(buffer: TypedArray): void {
    freeArray(this.engine.arena, buffer, this.rank);
  }

  /** This rank's flight record of the communicator, as the engine that ran its calls keeps it. */
  flightRecords(): CommRecord {
    return this.engine.query({ comm: this.comm, what: 'flightRecords' }) as CommRecord;
  }

  /** Under 'auto', this rank's flight record of the calls run on its own thread (a communicator named `<name>/inline`). */
  inlineFlightRecords(): CommRecord | undefined {
    return this.twin?.comm.flightRecords();
  }

  /** What this rank's links recovered from so far (Communicator.stats), as the engine that owns them counts. */
  stats(): CommStats {
    return this.engine.query({ comm: this.comm, what: 'stats' }) as CommStats;
  }

  /** What a call of `bytes` would cost and which algorithm would run it (Communicator.predict). */
  predict(collective: string, bytes: number, options: PredictOptions = {}): Prediction {
    return this.engine.query({
      comm: this.comm,
      what: 'predict',
      args: { collective, bytes, options: { ...options } },
    }) as Prediction;
  }

  allReduce(buffer: TypedArray, options: ReduceOptions = {}): Promise<void> {
    return this.collective('allReduce', buffer, options);
  }
  broadcast(buffer: TypedArray, options: RootedOptions = {}): Promise<void> {
    return this.collective('broadcast', buffer, options);
  }
  reduce(buffer: TypedArray, options: RootedReduceOptions = {}): Promise<void> {
    return this.collective('reduce', buffer, options);
  }
  allGather(buffer: TypedArray, options: CollectiveOptions = {}): Promise<void> {
    return this.collective('allGather', buffer, options);
  }
  reduceScatter(buffer: TypedArray, options: ReduceOptions = {}): Promise<void> {
    return this.collective('reduceScatter', buffer, options);
  }
  allToAll(buffer: TypedArray, options: AllToAllOptions = {}): Promise<void> {
    return this.collective('allToAll', buffer, options);
  }
  gather(buffer: TypedArray, options: RootedOptions = {}): Promise<void> {
    return this.collective('gather', buffer, options);
  }
  scatter(buffer: TypedArray, options: RootedOptions = {}): Promise<void> {
    return this.collective('scatter', buffer, options);
  }
  barrier(options: CallOptions = {}): Promise<void> {
    return settled(this.onEngine(() => this.issue('barrier', { options })));
  }
  send(buffer: TypedArray, peer: number, options: CallOptions = {}): Promise<void> {
    return settled(this.onEngine(() => this.issue('send', { buffer, peer, options, writes: false })));
  }
  recv(buffer: TypedArray, peer: number, options: CallOptions = {}): Promise<void> {
    return settled(this.onEngine(() => this.issue('recv', { buffer, peer, options, writes: true })));
  }

  /** Issues the calls `build` records as one (Communicator.group); each call runs on the engine. */
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

  /** What `group(build)` would run and cost, without communicating (Communicator.predictGroup). */
  predictGroup(build: (group: Group) => void | Promise<void>): Promise<GroupPrediction> {
    return priceGroup(this, build);
  }

  split(options: SplitOptions): Promise<EngineCommunicator | null> {
    // The child's twin is made within the split's turn, before any later call of this communicator.
    const split = async () => {
      const info = await this.issue('split', { options });
      // Every rank of a process ranks' twin splits it too (a collective), whatever group it lands in.
      const mirrored = this.mirrors() ? await this.twin!.comm.split(options) : undefined;
      if (info === null || info === undefined) {
        await mirrored?.destroy();
        return null;
      }
      this.engine.live++;
      return this.child(info, mirrored ?? undefined);
    };
    return this.onEngine(split);
  }

  async shrink(options: ShrinkOptions): Promise<EngineCommunicator> {
    // A shrink works on a failed communicator, whose calls may never settle: it waits for none.
    const info = await this.issue('shrink', { options });
    const mirrored = this.mirrors() ? await this.twin!.comm.shrink(options) : undefined;
    this.engine.live++;
    return this.child(info as EngineCommInfo, mirrored);
  }

  /** Whether a split's or shrink's twin comes from this one's (process ranks; thread ranks meet through the engine). */
  private mirrors(): boolean {
    return this.twin !== undefined && this.transportKind === 'tcp';
  }

  /** A split's or shrink's communicator, with a twin of its own where this one has one. */
  private child(info: EngineCommInfo, mirrored: Communicator | undefined): Promise<EngineCommunicator> {
    const twin = this.twin;
    return EngineCommunicator.opened(
      this.engine,
      info,
      this.defaultTimeoutMs,
      twin === undefined ? 'engine' : this.progress,
      twin === undefined ? undefined : { handOffUs: twin.handOffUs, mirrored },
    );
  }

  /** Waits for pending calls, retires the communicator, and ends the engine with the rank's last one. */
  async destroy(): Promise<void> {
    if (this.destroyed) return;
    this.destroyed = true;
    try {
      await this.lanes.drained();
      await this.twin?.comm.destroy();
      await this.issue('destroy', { options: {} });
    } finally {
      this.engine.retire();
    }
  }

  /** Ends every pending call of this communicator on this rank (TSCCL_ERR_ABORTED) and tells the peers. */
  abort(reason = 'aborted by the application'): void {
    this.twin?.comm.abort(reason);
    this.engine.post({ kind: 'abortComm', comm: this.comm, reason });
  }

  private collective(call: OptionsCall & EngineCall, buffer: TypedArray, options: CollectiveOptions): Promise<void> {
    // A buffer the call does not write back to: the input of an out-of-place call.
    const writes = options.output === undefined;
    const residual = typeof options.compression === 'object' ? options.compression.residual : undefined;
    if (residual !== undefined && !(residual.buffer instanceof SharedArrayBuffer))
      return Promise.reject(
        invalidArgument(
          `Rank ${this.rank}: ${call} runs on the progress engine, which writes the compression residual from its own thread: allocate it with comm.alloc('float32', n)`,
          { rank: this.rank, argument: 'compression' },
        ),
      );
    const twin = this.twin;
    if (twin !== undefined && !this.destroyed) {
      const bytes = callSizeBytes(call, buffer, options as AllToAllOptions);
      if (bytes !== undefined && runsInline(twin.engineMinBytes, call, bytes)) {
        const inline = twin.comm[call as 'allReduce'] as (b: TypedArray, o: CollectiveOptions) => Promise<void>;
        return this.lanes.issue('inline', () => inline.call(twin.comm, buffer, options));
      }
    }
    return settled(this.onEngine(() => this.issue(call, { buffer, options, writes })));
  }

  /** Starts work on the engine after the calls it must follow (CallLanes); at once where every call runs there. */
  private onEngine<T>(start: () => Promise<T>): Promise<T> {
    return this.twin === undefined ? start() : this.lanes.issue('engine', start);
  }

  /**
   * Checks the options here (so bad input fails as it would inline, before anything moves), puts
   * every array in the arena, and posts the call.
   */
  private issue(
    call: (OptionsCall & EngineCall) | 'sibling' | 'destroy',
    what: {
      buffer?: TypedArray;
      peer?: number;
      options: CallOptions & { output?: TypedArray; label?: string };
      writes?: boolean;
    },
  ): Promise<EngineCommInfo | null | undefined> {
    try {
      if (this.destroyed && call !== 'destroy')
        throw new TscclError(ErrorCode.DESTROYED, `Communicator ${this.name} on rank ${this.rank} was destroyed`, {
          rank: this.rank,
        });
      // The library's own calls (a sibling for its measures, destroy) take no options of a user.
      if (call !== 'destroy' && call !== 'sibling')
        checkOptions(call, what.options, { rank: this.rank, defaultTimeoutMs: this.defaultTimeoutMs });
      const { signal, output, ...rest } = what.options;
      const staging: Staging = { call, copies: [], staged: [] };
      // Checked before placing: what is not a typed array cannot be viewed in the arena.
      if ('buffer' in what) checkTypedArray(what.buffer, 'buffer', this.rank);
      if (output !== undefined) checkTypedArray(output, 'output', this.rank);
      const buffer = what.buffer === undefined ? undefined : this.place(what.buffer, what.writes === true, staging);
      const placedOutput = output === undefined ? undefined : this.place(output, true, staging);
      const finish = () => {
        for (const copy of staging.copies) copy();
      };
      return this.engine.call(
        { comm: this.comm, call, buffer, output: placedOutput, peer: what.peer, options: rest },
        { signal, finish: staging.copies.length === 0 ? undefined : finish, staged: staging.staged },
      );
    } catch (err) {
      return Promise.reject(err);
    }
  }

  /** Where the engine finds `array`: in place if it is in the arena, else a staged copy (copied back on completion if written). */
  private place(array: TypedArray, writes: boolean, staging: Staging): ArenaBuffer {
    const ctor = typedArrayName(array);
    const arena = this.engine.arena;
    if (arena.contains(array))
      return {
        byteOffset: array.byteOffset,
        length: array.length,
        ctor,
        dtype: allocatedDTypes.get(array)?.name as DType | undefined,
      };
    const staged = arena.allocateOwned(array.constructor as never, array.length, array.BYTES_PER_ELEMENT) as TypedArray;
    (staged as Uint8Array).set(array as Uint8Array);
    staging.staged.push(staged);
    // The engine works on the copy, so a change to the caller's array while the call runs would be
    // lost, or overwritten by the result: under TSCCL_DEBUG_CHECK it is an error.
    const issued = debugCheck ? crc32(bytesOf(array)) >>> 0 : 0;
    staging.copies.push(() => {
      if (debugCheck && crc32(bytesOf(array)) >>> 0 !== issued) {
        throw new TscclError(
          ErrorCode.CHECKSUM,
          `Rank ${this.rank}: an array handed to ${staging.call} changed while the call ran (TSCCL_DEBUG_CHECK=1): a buffer handed to a call must not be written until the call resolves`,
          { rank: this.rank, op: staging.call, argument: 'buffer' },
        );
      }
      if (writes) (array as Uint8Array).set(staged as Uint8Array);
      arena.release(staged);
    });
    return {
      byteOffset: staged.byteOffset,
      length: staged.length,
      ctor,
      dtype: allocatedDTypes.get(array)?.name as DType | undefined,
    };
  }
}
