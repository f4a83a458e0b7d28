import { test } from 'node:test';
import assert from 'node:assert/strict';
import { type Schedule, type Step, slice } from '../../src/algorithms/schedule.js';
import { dtypeInfo } from '../../src/dtypes/dtype.js';
import { executeSchedule } from '../../src/exec/executor.js';
import type { Consume, SendHandle, Transport, WaitContext } from '../../src/transport/transport.js';

const BLOCK = 4; // elements a peer sends
const ctx: WaitContext = { spinMs: 0, spinYields: false, check() {}, sliceMs: () => 1000 };

/**
 * A transport whose messages come only when `release` says: it records the order in which
 * receives were posted, and can fail one peer's receive.
 */
class HeldTransport implements Transport {
  readonly rank = 0;
  readonly nranks = 4;
  readonly posted: number[] = [];
  readonly settled: number[] = [];
  /** For each posted receive, how many had settled before it was posted. */
  readonly settledBeforePost: number[] = [];
  private readonly waiting = new Map<
    number,
    { bytes: number; consume: Consume; resolve: () => void; reject: (err: Error) => void }
  >();

  readonly concurrentRecvs: boolean;
  private readonly release: (posted: readonly number[]) => number[];
  private readonly failing: number | undefined;

  constructor(concurrentRecvs: boolean, release: (posted: readonly number[]) => number[], failing?: number) {
    this.concurrentRecvs = concurrentRecvs;
    this.release = release;
    this.failing = failing;
  }

  async send(peer: number): Promise<SendHandle> {
    return { peer, channel: 0, ticket: 1 };
  }
  isDelivered(): boolean {
    return true;
  }
  async waitDelivered(): Promise<void> {}

  recv(
    peer: number,
    _channel: number,
    bytes: number,
    _elementBytes: number,
    _tag: unknown,
    consume: Consume,
  ): Promise<void> {
    this.posted.push(peer);
    this.settledBeforePost.push(this.settled.length);
    const done = new Promise<void>((resolve, reject) => this.waiting.set(peer, { bytes, consume, resolve, reject }));
    for (const ready of this.release(this.posted)) this.deliver(ready);
    return done;
  }

  private deliver(peer: number): void {
    const waiter = this.waiting.get(peer);
    if (waiter === undefined) return;
    this.waiting.delete(peer);
    // Settle on a later turn, as a socket's bytes come, in the order released.
    setImmediate(() => {
      this.settled.push(peer);
      if (peer === this.failing) return waiter.reject(new Error(`rank ${peer} failed`));
      waiter.consume(new Uint8Array(waiter.bytes).fill(peer), 0);
      waiter.resolve();
    });
  }
}

function run(transport: Transport, steps: Step[]): { promise: Promise<void>; output: Uint8Array } {
  const output = new Uint8Array(4 * BLOCK);
  const schedule: Schedule = {
    collective: 'allGather',
    algorithm: 'direct',
    nranks: 4,
    rank: 0,
    channels: [steps],
    scratchCount: 0,
  };
  const dtype = dtypeInfo('uint8');
  const promise = executeSchedule({
    schedule,
    dtype,
    kernel: () => {},
    transport,
    tag: { seq: 1, opcode: 1 },
    ctx,
    channelBase: 0,
    buffers: { input: new Uint8Array(BLOCK) as never, output: output as never, scratch: new Uint8Array(0) as never },
  });
  return { promise, output };
}

const recvs = (peers: number[]): Step[] =>
  peers.map((peer) => ({ kind: 'recv', peer, dst: slice('output', peer * BLOCK, BLOCK) }));

test('over a transport that allows it, plain receives from different peers wait together and fill their own bytes', async () => {
  // The peers' messages come only once all three receives are posted, last peer first.
  const transport = new HeldTransport(true, (posted) => (posted.length === 3 ? [3, 2, 1] : []));
  const { promise, output } = run(transport, recvs([1, 2, 3]));
  await promise;
  assert.deepEqual(transport.settledBeforePost, [0, 0, 0]);
  assert.deepEqual(transport.settled, [3, 2, 1]);
  assert.deepEqual([...output], [0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3]);
});

test('without the transport saying so, receives stay one at a time', async () => {
  const transport = new HeldTransport(false, (posted) => [posted[posted.length - 1]]);
  await run(transport, recvs([1, 2, 3])).promise;
  assert.deepEqual(transport.settledBeforePost, [0, 1, 2]);
});

test('receives that reduce, or come twice from one peer, keep the schedule order', async () => {
  const transport = new HeldTransport(true, (posted) => [posted[posted.length - 1]]);
  const reducing: Step[] = [
    { kind: 'recvReduce', peer: 1, src: slice('output', 0, BLOCK), dst: slice('output', 0, BLOCK) },
    { kind: 'recvReduce', peer: 2, src: slice('output', 0, BLOCK), dst: slice('output', 0, BLOCK) },
  ] as Step[];
  await run(transport, reducing).promise;
  assert.deepEqual(transport.settledBeforePost, [0, 1]);
  const twice = new HeldTransport(true, (posted) => [posted[posted.length - 1]]);
  await run(twice, [
    { kind: 'recv', peer: 1, dst: slice('output', 0, BLOCK) },
    { kind: 'recv', peer: 1, dst: slice('output', BLOCK, BLOCK) },
  ]).promise;
  assert.deepEqual(twice.settledBeforePost, [0, 1]);
});

test('a failed receive fails the call only after the others of its run have settled', async () => {
  const transport = new HeldTransport(true, (posted) => (posted.length === 3 ? [1, 2, 3] : []), 1);
  await assert.rejects(run(transport, recvs([1, 2, 3])).promise, /rank 1 failed/);
  assert.deepEqual(transport.settled, [1, 2, 3]);
});

test('sends the peers consumed long ago are not asked about again at every later step', async () => {
  // Every send covers the whole output and every receive writes a piece of it, so each receive
  // asks about every send still listed. Listed for the whole call, that was about n^2 questions (a
  // 2-rank ring all-reduce of 64 MB in 4 KiB pieces took 3.5 s); pruned once the list is long,
  // a few dozen a step.
  const pieces = 1000;
  let asked = 0;
  const transport: Transport = {
    rank: 0,
    nranks: 2,
    send: async (peer) => ({ peer, channel: 0, ticket: 1 }),
    recv: async (_peer, _channel, bytes, _elementBytes, _tag, consume) => {
      consume(new Uint8Array(bytes), 0);
    },
    isDelivered: () => {
      asked++;
      return true;
    },
    waitDelivered: async () => {},
  };
  const steps: Step[] = [];
  for (let i = 0; i < pieces; i++) {
    steps.push({ kind: 'send', peer: 1, src: slice('output', 0, pieces) });
    steps.push({ kind: 'recv', peer: 1, dst: slice('output', i, 1) });
  }
  const schedule: Schedule = {
    collective: 'allGather',
    algorithm: 'ring',
    nranks: 2,
    rank: 0,
    channels: [steps],
    scratchCount: 0,
  };
  await executeSchedule({
    schedule,
    dtype: dtypeInfo('uint8'),
    kernel: () => {},
    transport,
    tag: { seq: 1, opcode: 1 },
    ctx,
    channelBase: 0,
    buffers: {
      input: new Uint8Array(0) as never,
      output: new Uint8Array(pieces) as never,
      scratch: new Uint8Array(0) as never,
    },
  });
  assert.ok(asked < 100 * pieces, `${asked} questions for ${pieces} receives`);
});

test("a schedule with more channels than collectives own is refused before it posts anything, not run on point-to-point's queue", async () => {
  const transport = new HeldTransport(true, () => []);
  const schedule: Schedule = {
    collective: 'allGather',
    algorithm: 'two-channel',
    nranks: 4,
    rank: 0,
    channels: [recvs([1]), recvs([2])],
    scratchCount: 0,
  };
  await assert.rejects(
    executeSchedule({
      schedule,
      dtype: dtypeInfo('uint8'),
      kernel: () => {},
      transport,
      tag: { seq: 1, opcode: 1 },
      ctx,
      channelBase: 0,
      buffers: {
        input: new Uint8Array(BLOCK) as never,
        output: new Uint8Array(4 * BLOCK) as never,
        scratch: new Uint8Array(0) as never,
      },
    }),
    { code: 'TSCCL_ERR_INTERNAL', message: /needs channels 0\.\.1/ },
  );
  assert.deepEqual(transport.posted, []);
});
