import assert from 'node:assert/strict';
import { test } from 'node:test';
import {
  type CallShape,
  COLLECTIVES,
  type Collective,
  bufferCounts,
  inPlaceExtent,
  inPlaceLayout,
} from '../../src/algorithms/schedule.js';
import { allocateMailbox, mailboxBytes } from '../../src/comm/shm-backend.js';
import { CommStatus } from '../../src/comm/status.js';
import { dtypeInfo } from '../../src/dtypes/dtype.js';
import { ErrorCode, TscclError } from '../../src/errors.js';
import { OneShotCall } from '../../src/exec/one-shot.js';
import { type ReduceKernel, reduceKernel } from '../../src/kernels/reduce-kernel.js';
import { Arena } from '../../src/memory/arena.js';
import { ShmLowLatencySlots } from '../../src/transport/shm/ll-slots.js';
import { type LowLatencySlots, OPCODES, type WaitContext } from '../../src/transport/transport.js';

// The executor's one-shot path on the real shared-memory slots, all ranks in this thread.

const F64 = dtypeInfo('float64');
const SUM = reduceKernel('float64', 'sum');
const ROOTED = new Set<Collective>(['broadcast', 'reduce', 'gather', 'scatter']);

function context(): WaitContext {
  const deadline = performance.now() + 30_000;
  return {
    spinMs: 0,
    spinYields: false,
    sliceMs: () => 5,
    check: () => {
      if (performance.now() > deadline) throw new TscclError(ErrorCode.TIMEOUT, 'test deadline');
    },
  };
}

/** n ranks' shared-memory slots and status words in one arena. */
function shmWorld(n: number) {
  const arena = Arena.create();
  const mailboxes = Array.from({ length: n }, () => allocateMailbox(arena, n));
  const words = arena.int32Covering(Math.max(...mailboxes) + mailboxBytes(n));
  return {
    arena,
    slots: mailboxes.map((_, r) => new ShmLowLatencySlots(arena, r, mailboxes, words)),
    status: mailboxes.map((_, r) => new CommStatus(words, mailboxes, r)),
  };
}

/**
 * Slots that behave as TCP's do (tcp/tcp-low-latency.ts): every message is a copy, and a rank
 * that holds no data sends none, only the size it publishes.
 */
class CopyingSlots implements LowLatencySlots {
  readonly capacity = 1 << 20;
  private readonly rank: number;
  private readonly world: {
    messages: Map<string, { opcode: number; bytes: number; data: Uint8Array }>;
    waiters: Map<string, () => void>;
  };

  constructor(rank: number, world: CopyingSlots['world']) {
    this.rank = rank;
    this.world = world;
  }

  publish(seq: number, opcode: number, bytes: number, data: Uint8Array | undefined): undefined {
    const key = `${this.rank}#${seq}`;
    this.world.messages.set(key, { opcode, bytes, data: data === undefined ? new Uint8Array(0) : data.slice() });
    this.world.waiters.get(key)?.();
    return undefined;
  }

  arrived(peer: number, seq: number): Promise<void> | undefined {
    const key = `${peer}#${seq}`;
    if (this.world.messages.has(key)) return undefined;
    return new Promise((resolve) => this.world.waiters.set(key, resolve));
  }

  read(peer: number, seq: number, opcode: number, bytes: number): Uint8Array {
    const message = this.world.messages.get(`${peer}#${seq}`)!;
    if (message.opcode !== opcode || message.bytes !== bytes)
      throw new TscclError(ErrorCode.MISMATCH, `rank ${peer} sent another call`);
    return message.data;
  }
}

/** n ranks' slots: the real shared-memory ones, or copying ones as over TCP. */
function world(n: number, transport: Transport) {
  if (transport === 'shm') return shmWorld(n);
  const shared: CopyingSlots['world'] = { messages: new Map(), waiters: new Map() };
  return {
    arena: Arena.create(),
    slots: Array.from({ length: n }, (_, r) => new CopyingSlots(r, shared)),
    status: undefined,
  };
}

type Transport = 'shm' | 'copying';
type Memory = 'user' | 'registered';

/** A rank's input and output views as a communicator makes them: two arrays, or two views of one (in place). */
function views(
  arena: Arena,
  memory: Memory,
  shape: CallShape,
  rank: number,
): { input: Float64Array; output: Float64Array } {
  const array = (length: number) =>
    memory === 'user'
      ? new Float64Array(length)
      : arena.view(Float64Array, arena.allocate(Math.max(8, length * 8)), length, 8);
  const counts = bufferCounts(shape, rank);
  if (!shape.inPlace) return { input: array(counts.input), output: array(counts.output) };
  const layout = inPlaceLayout(shape, rank);
  const user = array(inPlaceExtent(shape, rank));
  const inner = user.subarray(layout.offset, layout.offset + counts[layout.inner]);
  return layout.inner === 'input' ? { input: inner, output: user } : { input: user, output: inner };
}

const value = (seq: number, rank: number, i: number) => seq * 100_000 + rank * 1000 + i + 1;

/** What `rank`'s output must hold, by the collective's definition. */
function expected(shape: CallShape, rank: number, seq: number): number[] | undefined {
  const { collective: op, nranks: n, count: c, root } = shape;
  const ranks = Array.from({ length: n }, (_, r) => r);
  const sum = (i: number) => ranks.reduce((s, r) => s + value(seq, r, i), 0);
  const each = (length: number, f: (i: number) => number) => Array.from({ length }, (_, i) => f(i));
  switch (op) {
    case 'allReduce':
      return each(c, sum);
    case 'reduce':
      return rank === root ? each(c, sum) : undefined;
    case 'reduceScatter':
      return each(c, (i) => sum(rank * c + i));
    case 'allGather':
      return each(n * c, (j) => value(seq, Math.floor(j / c), j % c));
    case 'gather':
      return rank === root ? each(n * c, (j) => value(seq, Math.floor(j / c), j % c)) : undefined;
    case 'allToAll':
      return each(n * c, (j) => value(seq, Math.floor(j / c), rank * c + (j % c)));
    case 'broadcast':
      return each(c, (i) => value(seq, root, i));
    case 'scatter':
      return each(c, (i) => value(seq, root, rank * c + i));
    case 'barrier':
      return undefined;
  }
}

/** Runs one call shape on every rank twice, each time with fresh inputs, checking every output; returns whether each rank went by reference. */
async function runCalls(
  shape: CallShape,
  memory: Memory,
  transport: Transport = 'shm',
): Promise<{ byReference: boolean[]; ownSlotReads: number[] }> {
  const { arena, slots, status } = world(shape.nranks, transport);
  const ranks = Array.from({ length: shape.nranks }, (_, r) => r);
  const ownSlotReads = ranks.map(() => 0);
  for (const r of ranks) {
    const read = slots[r].read.bind(slots[r]);
    slots[r].read = (peer, seq, opcode, bytes) => {
      if (peer === r) ownSlotReads[r]++;
      return read(peer, seq, opcode, bytes);
    };
  }
  const buffers = ranks.map((r) => views(arena, memory, shape, r));
  const calls = ranks.map(
    (r) =>
      new OneShotCall({
        shape,
        rank: r,
        ...buffers[r],
        dtype: F64,
        kernel: SUM,
        slots: slots[r],
        opcode: OPCODES[shape.collective],
      }),
  );
  const ctx = context();
  for (let seq = 1; seq <= 2; seq++) {
    for (const r of ranks)
      buffers[r].input.set(Array.from({ length: buffers[r].input.length }, (_, i) => value(seq, r, i)));
    const inputs = buffers.map((b) => Array.from(b.input));
    for (const r of ranks) status?.[r].enter(seq);
    await Promise.all(calls.map((call) => call.run(seq, ctx)));
    for (const r of ranks) {
      const want = expected(shape, r, seq);
      const where = `${shape.collective} n=${shape.nranks} count=${shape.count} root=${shape.root} inPlace=${shape.inPlace} ${memory} ${transport} rank ${r} call ${seq}`;
      if (want !== undefined) assert.deepEqual(Array.from(buffers[r].output), want, where);
      if (!shape.inPlace) assert.deepEqual(Array.from(buffers[r].input), inputs[r], `${where}: input changed`);
    }
  }
  return { byReference: calls.map((call) => call.byReference), ownSlotReads };
}

const shape = (over: Partial<CallShape>): CallShape => ({
  collective: 'allReduce',
  nranks: 2,
  count: 3,
  root: 0,
  inPlace: false,
  chunkCount: 0,
  ...over,
});

test('every collective the one-shot path runs gives its result, in and out of place, copied and by reference', async () => {
  for (const collective of COLLECTIVES) {
    for (const n of [1, 2, 3, 5]) {
      // 3 elements are copied into the slots; 300 (2400 B) go by reference from registered memory.
      for (const count of collective === 'barrier' ? [0] : [3, 300]) {
        for (const root of ROOTED.has(collective) ? [0, n - 1] : [0]) {
          for (const inPlace of [false, true]) {
            for (const memory of ['user', 'registered'] as const)
              await runCalls(shape({ collective, nranks: n, count, root, inPlace }), memory);
            await runCalls(shape({ collective, nranks: n, count, root, inPlace }), 'user', 'copying');
          }
        }
      }
    }
  }
});

test('registered memory goes by reference where the output leaves the published bytes alone; user memory is copied', async () => {
  const big = (over: Partial<CallShape>) => shape({ nranks: 3, count: 300, ...over });
  assert.deepEqual((await runCalls(big({}), 'registered')).byReference, [true, true, true]);
  assert.deepEqual((await runCalls(big({}), 'user')).byReference, [false, false, false]);
  // An in-place all-reduce overwrites what it published; an in-place all-gather writes its own block back onto itself.
  assert.deepEqual((await runCalls(big({ inPlace: true }), 'registered')).byReference, [false, false, false]);
  assert.deepEqual((await runCalls(big({ collective: 'allGather', inPlace: true }), 'registered')).byReference, [
    true,
    true,
    true,
  ]);
  // Only the root holds broadcast data; small messages are copied.
  assert.deepEqual((await runCalls(big({ collective: 'broadcast', root: 1 }), 'registered')).byReference, [
    false,
    true,
    false,
  ]);
  assert.deepEqual((await runCalls(big({ count: 3 }), 'registered')).byReference, [false, false, false]);
});

test('a rank reads its own message in its input, unless the output is written over it before it is read', async () => {
  const three = (over: Partial<CallShape>) => shape({ nranks: 3, ...over });
  // Out of place nothing writes over the input.
  assert.deepEqual((await runCalls(three({}), 'user')).ownSlotReads, [0, 0, 0]);
  // In place, ranks 0 and 1 are the first fold's operands; rank 2's input is by then the partial sum.
  assert.deepEqual((await runCalls(three({ inPlace: true }), 'user')).ownSlotReads, [0, 0, 2]);
  assert.deepEqual(
    (await runCalls(three({ collective: 'reduceScatter', inPlace: true }), 'user')).ownSlotReads,
    [0, 0, 2],
  );
  // An in-place all-gather places each rank's block onto itself, clear of the others.
  assert.deepEqual((await runCalls(three({ collective: 'allGather', inPlace: true }), 'user')).ownSlotReads, [0, 0, 0]);
  // A message published by reference is read where it lies, through its slot.
  assert.deepEqual((await runCalls(three({ count: 300 }), 'registered')).ownSlotReads, [2, 2, 2]);
});

test('reductions fold in rank order on every rank', async () => {
  // A kernel that is not commutative shows the order: ((r0 . r1) . r2) . r3 with a . b = 10a + b.
  const digits: ReduceKernel = (dst, a, b) => {
    for (let i = 0; i < dst.length; i++)
      (dst as Float64Array)[i] = (a as Float64Array)[i] * 10 + (b as Float64Array)[i];
  };
  for (const collective of ['allReduce', 'reduceScatter'] as const) {
    const s = shape({ collective, nranks: 4, count: 2 });
    const { outputs } = await runCallsWith(s, digits);
    for (const output of outputs) assert.deepEqual(Array.from(output), [1234, 1234]);
  }
});

/** Runs a call whose every rank's input is its rank + 1 throughout, with `kernel`. */
async function runCallsWith(s: CallShape, kernel: ReduceKernel): Promise<{ outputs: Float64Array[] }> {
  const { arena, slots, status } = shmWorld(s.nranks);
  const ranks = Array.from({ length: s.nranks }, (_, r) => r);
  const buffers = ranks.map((r) => views(arena, 'user', s, r));
  buffers.forEach((b, r) => {
    b.input.fill(r + 1);
  });
  const calls = ranks.map(
    (r) =>
      new OneShotCall({
        shape: s,
        rank: r,
        ...buffers[r],
        dtype: F64,
        kernel,
        slots: slots[r],
        opcode: OPCODES[s.collective],
      }),
  );
  for (const r of ranks) status[r].enter(1);
  await Promise.all(calls.map((call) => call.run(1, context())));
  return { outputs: calls.map((call) => call.output as Float64Array) };
}

test('a peer that called another collective is a MISMATCH', async () => {
  const { arena, slots, status } = shmWorld(2);
  const calls = (['allReduce', 'allGather'] as const).map((collective, r) => {
    const s = shape({ collective, count: 2 });
    return new OneShotCall({
      shape: s,
      rank: r,
      ...views(arena, 'user', s, r),
      dtype: F64,
      kernel: SUM,
      slots: slots[r],
      opcode: OPCODES[collective],
    });
  });
  status.forEach((st) => {
    st.enter(1);
  });
  const results = await Promise.allSettled(calls.map(async (call) => call.run(1, context())));
  for (const result of results) {
    assert.equal(result.status, 'rejected');
    assert.ok(result.reason instanceof TscclError && result.reason.code === ErrorCode.MISMATCH, String(result.reason));
  }
});

test('where a rank that holds no data sends none, a peer that called another root is a MISMATCH', async () => {
  // Ranks 0 and 1 broadcast from rank 0, rank 2 from rank 1: rank 1 sends no data, which rank 2 needs.
  const { arena, slots } = world(3, 'copying');
  const calls = [0, 0, 1].map((root, r) => {
    const s = shape({ collective: 'broadcast', nranks: 3, root });
    return new OneShotCall({
      shape: s,
      rank: r,
      ...views(arena, 'user', s, r),
      dtype: F64,
      kernel: SUM,
      slots: slots[r],
      opcode: OPCODES.broadcast,
    });
  });
  const results = await Promise.allSettled(calls.map(async (call) => call.run(1, context())));
  assert.deepEqual(
    results.map((result) => result.status),
    ['fulfilled', 'fulfilled', 'rejected'],
  );
  const { reason } = results[2] as PromiseRejectedResult;
  assert.ok(
    reason instanceof TscclError &&
      reason.code === ErrorCode.MISMATCH &&
      /rank 1 sent none: the ranks called different roots/.test(reason.message),
    String(reason),
  );
});
