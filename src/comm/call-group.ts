import type { DType, TypedArray } from '../dtypes/dtype.js';
import { ErrorCode, TscclError, invalidArgument } from '../errors.js';
import type { Prediction } from '../tuner/predict.js';
import {
  type AllToAllOptions,
  type CallOptions,
  type CollectiveOptions,
  type ReduceOptions,
  type RootedOptions,
  type RootedReduceOptions,
  callOptionsOf,
  checkOptions,
} from './call-options.js';
import { settleAll } from './settle-all.js';
import { resolveDType } from './validate.js';

/** What a group needs of a communicator: its public calls (a Communicator, or one on a progress engine). */
export interface GroupTarget {
  readonly rank: number;
  readonly size: number;
  /** The largest all-reduce the tuner fuses with others (tuner/group-fusion.ts), the same on every rank. */
  readonly groupFusionMaxBytes: number;
  alloc(dtype: DType, count: number): TypedArray;
  free(buffer: TypedArray): void;
  allReduce(buffer: TypedArray, options?: ReduceOptions): Promise<void>;
  broadcast(buffer: TypedArray, options?: RootedOptions): Promise<void>;
  reduce(buffer: TypedArray, options?: RootedReduceOptions): Promise<void>;
  allGather(buffer: TypedArray, options?: CollectiveOptions): Promise<void>;
  reduceScatter(buffer: TypedArray, options?: ReduceOptions): Promise<void>;
  allToAll(buffer: TypedArray, options?: AllToAllOptions): Promise<void>;
  send(buffer: TypedArray, peer: number, options?: CallOptions): Promise<void>;
  recv(buffer: TypedArray, peer: number, options?: CallOptions): Promise<void>;
}

type GroupOptions = Pick<CallOptions, 'timeoutMs' | 'signal'>;

/** The calls a group takes: the communicator's, recorded, issued together when the group's function returns. */
export interface Group {
  allReduce(buffer: TypedArray, options?: Omit<ReduceOptions, keyof GroupOptions>): void;
  broadcast(buffer: TypedArray, options?: Omit<RootedOptions, keyof GroupOptions>): void;
  reduce(buffer: TypedArray, options?: Omit<RootedReduceOptions, keyof GroupOptions>): void;
  allGather(buffer: TypedArray, options?: Omit<CollectiveOptions, keyof GroupOptions>): void;
  reduceScatter(buffer: TypedArray, options?: Omit<ReduceOptions, keyof GroupOptions>): void;
  allToAll(buffer: TypedArray, options?: Omit<AllToAllOptions, keyof GroupOptions>): void;
  send(buffer: TypedArray, peer: number): void;
  recv(buffer: TypedArray, peer: number): void;
}

type CollectiveName = 'allReduce' | 'broadcast' | 'reduce' | 'allGather' | 'reduceScatter' | 'allToAll';
const COLLECTIVE_NUMBERS: Readonly<Record<CollectiveName, number>> = {
  allReduce: 1,
  broadcast: 2,
  reduce: 3,
  allGather: 4,
  reduceScatter: 5,
  allToAll: 6,
};

interface RecordedCollective {
  readonly kind: 'collective';
  readonly name: CollectiveName;
  readonly buffer: TypedArray;
  readonly options: CollectiveOptions;
}

type Recorded =
  | RecordedCollective
  | { readonly kind: 'send' | 'recv'; readonly buffer: TypedArray; readonly peer: number };

/** Fusable all-reduces of one element type and operation, fused into one call. */
interface Bucket {
  readonly dtype: DType;
  readonly members: RecordedCollective[];
  bytes: number;
}

/**
 * At most this many bytes a fused call: a group's extra arena memory stays bounded, and a
 * large all-reduce gains nothing from fusing (its time is its bytes, not its calls). PyTorch
 * DDP's default gradient bucket is 25 MiB.
 */
export const FUSED_MAX_BYTES = 16 << 20;

/**
 * Runs `build` to record calls, then issues them as one (ncclGroupStart/End, torch's coalescing
 * manager): all-reduces of the same element type and operation, in place, without an algorithm
 * of their own and no larger than the tuner's fusion limit, fused into buckets of one call each
 * (copied into the arena, reduced once, copied back), the other collectives in the order
 * recorded, and every send and receive posted together, so that no order of them can deadlock.
 * With `check` (TSCCL_DEBUG_CHECK), the ranks first compare what their groups hold and all fail
 * with TSCCL_ERR_MISMATCH, naming the ranks, where they differ. Resolves when every call has.
 */
export async function runGroup(
  comm: GroupTarget,
  build: (group: Group) => void | Promise<void>,
  options: GroupOptions & { readonly check: boolean; readonly name: string; readonly defaultTimeoutMs: number },
): Promise<void> {
  const { check, name, defaultTimeoutMs, ...given } = options;
  checkOptions('group', given, { rank: comm.rank, defaultTimeoutMs });
  const recorded = await recordGroup(comm.rank, build);
  // Checked before anything is issued: every rank refuses the same group alike.
  const fused = buckets(recorded, comm);
  const call: GroupOptions = callOptionsOf(options);
  if (check) await compareGroups(comm, recorded, { call, name });
  const running: Promise<void>[] = [];
  for (const bucket of fused) running.push(runBucket(comm, bucket, call));
  for (const r of recorded) {
    if (r.kind !== 'collective') running.push(comm[r.kind](r.buffer, r.peer, call));
    else if (!fusable(r, comm)) running.push(comm[r.name](r.buffer, { ...r.options, ...call }));
  }
  // Every call runs to its end before the group reports, so no buffer is still in use when it does.
  await settleAll(running);
}

/** Runs `build` against a recorder: the calls it makes, in order. */
async function recordGroup(rank: number, build: (group: Group) => void | Promise<void>): Promise<Recorded[]> {
  const recorded: Recorded[] = [];
  const collective =
    (name: CollectiveName) =>
    (buffer: TypedArray, callOptions: CollectiveOptions = {}) => {
      for (const key of ['timeoutMs', 'signal'] as const)
        if (key in callOptions)
          throw invalidArgument(`Rank ${rank}: ${key} is the group's option, not ${name}'s inside it`, {
            rank,
            argument: key,
          });
      recorded.push({ kind: 'collective', name, buffer, options: callOptions });
    };
  await build({
    allReduce: collective('allReduce'),
    broadcast: collective('broadcast'),
    reduce: collective('reduce'),
    allGather: collective('allGather'),
    reduceScatter: collective('reduceScatter'),
    allToAll: collective('allToAll'),
    send: (buffer, peer) => {
      recorded.push({ kind: 'send', buffer, peer });
    },
    recv: (buffer, peer) => {
      recorded.push({ kind: 'recv', buffer, peer });
    },
  });
  return recorded;
}

/** One call of a group as it would run: a fused bucket of all-reduces or a collective alone. */
export interface GroupCallPrediction {
  readonly collective: CollectiveName;
  /** The call's size as the tuner sizes it (the root's input). */
  readonly bytes: number;
  /** The recorded calls it runs (several for a fused bucket). */
  readonly tensors: number;
  readonly algorithm: string;
  readonly timeUs: number;
}

export interface GroupPrediction {
  /** The group's calls one after another, as they run on the communicator. */
  readonly timeUs: number;
  readonly calls: readonly GroupCallPrediction[];
  /** Sends and receives, which the cost model does not price. */
  readonly unpriced: number;
}

/** What a group would run and cost (comm.predictGroup): the same buckets runGroup makes, each priced by `predict`. */
export async function priceGroup(
  comm: {
    readonly rank: number;
    readonly size: number;
    readonly groupFusionMaxBytes: number;
    predict(collective: string, bytes: number, options?: { dtype?: DType }): Prediction;
  },
  build: (group: Group) => void | Promise<void>,
): Promise<GroupPrediction> {
  const recorded = await recordGroup(comm.rank, build);
  const calls: GroupCallPrediction[] = [];
  const price = (name: CollectiveName, bytes: number, dtype: DType, tensors: number) => {
    const prediction = comm.predict(name, bytes, { dtype });
    calls.push({ collective: name, bytes, tensors, algorithm: prediction.algorithm, timeUs: prediction.timeUs });
  };
  for (const bucket of buckets(recorded, comm)) price('allReduce', bucket.bytes, bucket.dtype, bucket.members.length);
  let unpriced = 0;
  for (const r of recorded) {
    if (r.kind !== 'collective') unpriced++;
    else if (!fusable(r, comm)) price(r.name, inputBytes(r, comm.size), dtypeOf(r, comm.rank), 1);
  }
  return { timeUs: calls.reduce((sum, c) => sum + c.timeUs, 0), calls, unpriced };
}

/** A recorded collective's size as the tuner sizes a call: the root's input (one block of an in-place all-gather). */
function inputBytes(r: RecordedCollective, size: number): number {
  return r.name === 'allGather' && r.options.output === undefined ? r.buffer.byteLength / size : r.buffer.byteLength;
}

/** The call's element type as the communicator resolves it: the dtype option, or the array's own. */
function dtypeOf(r: RecordedCollective, rank: number): DType {
  return resolveDType(r.buffer, r.options.dtype, 'buffer', rank).name as DType;
}

/**
 * An all-reduce in place that names nothing of its own (algorithm, checksum), within the
 * communicator's fusion limit: it may share a call with others.
 */
function fusable(r: RecordedCollective, comm: { readonly groupFusionMaxBytes: number }): boolean {
  return (
    r.name === 'allReduce' &&
    r.buffer.byteLength <= comm.groupFusionMaxBytes &&
    r.options.output === undefined &&
    r.options.algorithm === undefined &&
    r.options.checksum === undefined
  );
}

/** The group's fusable all-reduces by element type and operation, cut into buckets of at most FUSED_MAX_BYTES. */
function buckets(
  recorded: readonly Recorded[],
  comm: { readonly rank: number; readonly groupFusionMaxBytes: number },
): Bucket[] {
  const all: Bucket[] = [];
  const open = new Map<string, Bucket>();
  for (const r of recorded) {
    if (r.kind !== 'collective' || !fusable(r, comm)) continue;
    const dtype = dtypeOf(r, comm.rank);
    const key = `${dtype}|${(r.options as ReduceOptions).op ?? 'sum'}`;
    let bucket = open.get(key);
    if (bucket === undefined || bucket.bytes + r.buffer.byteLength > FUSED_MAX_BYTES) {
      bucket = { dtype, members: [], bytes: 0 };
      open.set(key, bucket);
      all.push(bucket);
    }
    bucket.members.push(r);
    bucket.bytes += r.buffer.byteLength;
  }
  return all;
}

/** One all-reduce for a bucket: alone as it is, or fused through one arena buffer. */
async function runBucket(comm: GroupTarget, bucket: Bucket, call: GroupOptions): Promise<void> {
  const [first] = bucket.members;
  if (bucket.members.length === 1) return comm.allReduce(first.buffer, { ...first.options, ...call });
  const total = bucket.members.reduce((sum, r) => sum + r.buffer.length, 0);
  const fused = comm.alloc(bucket.dtype, total);
  let at = 0;
  for (const r of bucket.members) {
    (fused as Uint8Array).set(r.buffer as Uint8Array, at);
    at += r.buffer.length;
  }
  // After a failure a peer may still read the fused buffer: it is then left to the collector.
  await comm.allReduce(fused, { ...first.options, ...call });
  at = 0;
  for (const r of bucket.members) {
    (r.buffer as Uint8Array).set((fused as Uint8Array).subarray(at, at + r.buffer.length));
    at += r.buffer.length;
  }
  comm.free(fused);
}

/**
 * Every rank's group in numbers: its collectives' fingerprint (each call's kind, element size and
 * count, in order) and, per peer, the messages and bytes it sends and receives. A rank's sends to
 * a peer must be that peer's receives from it; the collectives must be the same everywhere.
 */
async function compareGroups(
  comm: GroupTarget,
  recorded: readonly Recorded[],
  { call, name }: { readonly call: GroupOptions; readonly name: string },
): Promise<void> {
  const n = comm.size;
  const width = 2 + 4 * n;
  const mine = new Float64Array(width);
  let fingerprint = 0;
  let collectives = 0;
  for (const r of recorded) {
    if (r.kind === 'collective') {
      collectives++;
      fingerprint =
        (fingerprint * 31 + COLLECTIVE_NUMBERS[r.name] * 1009 + r.buffer.BYTES_PER_ELEMENT * 17 + r.buffer.length) %
        2 ** 40;
    } else {
      const at = 2 + 4 * r.peer + (r.kind === 'send' ? 0 : 2);
      mine[at] += 1;
      mine[at + 1] += r.buffer.byteLength;
    }
  }
  mine[0] = collectives;
  mine[1] = fingerprint;
  const all = new Float64Array(width * n);
  await comm.allGather(mine, { ...call, output: all });
  const problems: string[] = [];
  for (let r = 1; r < n; r++)
    if (all[r * width] !== all[0] || all[r * width + 1] !== all[1])
      problems.push(`rank ${r}'s collectives (${all[r * width]}) differ from rank 0's (${all[0]})`);
  for (let from = 0; from < n; from++)
    for (let to = 0; to < n; to++) {
      const sends = all[from * width + 2 + 4 * to];
      const sent = all[from * width + 3 + 4 * to];
      const recvs = all[to * width + 4 + 4 * from];
      const received = all[to * width + 5 + 4 * from];
      if (sends !== recvs || sent !== received)
        problems.push(
          `rank ${from} sends rank ${to} ${sends} message(s) of ${sent} bytes, rank ${to} receives ${recvs} of ${received}`,
        );
    }
  if (problems.length > 0)
    throw new TscclError(
      ErrorCode.MISMATCH,
      `Rank ${comm.rank}: the groups on ${name} do not match (TSCCL_DEBUG_CHECK=1): ${problems.slice(0, 4).join('; ')}`,
      { rank: comm.rank, op: 'group' },
    );
}
