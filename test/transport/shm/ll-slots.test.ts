import assert from 'node:assert/strict';
import { test } from 'node:test';
import { allocateMailbox, mailboxBytes } from '../../../src/comm/shm-backend.js';
import { CommStatus } from '../../../src/comm/status.js';
import { ErrorCode, TscclError } from '../../../src/errors.js';
import { Arena } from '../../../src/memory/arena.js';
import { LL_INLINE_BYTES, LL_SLOTS, LL_SLOT_BYTES } from '../../../src/transport/shm/mailbox.js';
import { ShmLowLatencySlots } from '../../../src/transport/shm/ll-slots.js';
import type { WaitContext } from '../../../src/transport/transport.js';

// Two ranks' views of one communicator's slots, both in this thread.
function pair() {
  const arena = Arena.create();
  const mailboxes = [allocateMailbox(arena, 2), allocateMailbox(arena, 2)];
  const words = arena.int32Covering(Math.max(...mailboxes) + mailboxBytes(2));
  return {
    arena,
    slots: [0, 1].map((r) => new ShmLowLatencySlots(arena, r, mailboxes, words)),
    status: [0, 1].map((r) => new CommStatus(words, mailboxes, r)),
  };
}

function context(timeoutMs: number): WaitContext {
  const deadline = performance.now() + timeoutMs;
  return {
    spinMs: 0,
    spinYields: false,
    sliceMs: () => 5,
    check: () => {
      if (performance.now() > deadline) throw new TscclError(ErrorCode.TIMEOUT, 'test deadline');
    },
  };
}

const OPCODE = 0;
/** For waits that must succeed: far off, so a loaded machine never reaches it. */
const SUCCESS_MS = 30_000;

test('a published message is read in place by the peer, flag and data together', () => {
  const { slots, status } = pair();
  status[0].enter(1);
  status[1].enter(1);
  assert.equal(slots[0].publish(1, OPCODE, 4, new Uint8Array([1, 2, 3, 4]), context(SUCCESS_MS)), undefined);
  assert.equal(slots[1].arrived(0, 1, context(SUCCESS_MS)), undefined);
  assert.deepEqual([...slots[1].read(0, 1, OPCODE, 4)], [1, 2, 3, 4]);
  assert.equal(slots[1].readPeerMemory(1), false, 'a copy in a slot is no memory its owner takes back');
});

test('a different operation or size on the peer is a MISMATCH naming both sides', () => {
  const { slots, status } = pair();
  status[0].enter(1);
  status[1].enter(1);
  slots[0].publish(1, OPCODE, 8, new Uint8Array(8), context(SUCCESS_MS));
  assert.throws(
    () => slots[1].read(0, 1, OPCODE, 4),
    (err: unknown) =>
      err instanceof TscclError &&
      err.code === ErrorCode.MISMATCH &&
      /expected allReduce #1 of 4 bytes from rank 0, but rank 0 sent allReduce #1 of 8 bytes/.test(err.message),
  );
  assert.throws(
    () => slots[1].read(0, 1, 1, 8),
    /expected broadcast #1 of 8 bytes from rank 0, but rank 0 sent allReduce #1/,
  );
});

for (const bytes of [4, LL_INLINE_BYTES]) {
  test(`a slot is reused only once every peer has entered the call after the one that last wrote it (${bytes} B)`, async () => {
    const { slots, status } = pair();
    const message = (seq: number) => new Uint8Array(bytes).fill(seq);
    status[0].enter(1);
    status[1].enter(1);
    slots[0].publish(1, OPCODE, bytes, message(1), context(SUCCESS_MS));
    // Rank 0 runs ahead through every other slot: each is free, as rank 1 never read it.
    for (let seq = 2; seq <= LL_SLOTS; seq++) {
      status[0].enter(seq);
      assert.equal(slots[0].publish(seq, OPCODE, bytes, message(seq), context(SUCCESS_MS)), undefined);
    }
    // Call LL_SLOTS + 1 reuses call 1's slot while rank 1 may still be reading it.
    const next = LL_SLOTS + 1;
    status[0].enter(next);
    const pending = slots[0].publish(next, OPCODE, bytes, message(next), context(SUCCESS_MS));
    assert.ok(pending instanceof Promise, 'the publish must wait');
    assert.deepEqual(slots[1].read(0, 1, OPCODE, bytes), message(1), 'call 1 is still readable');
    status[1].enter(2);
    await pending;
    for (let seq = 2; seq <= LL_SLOTS; seq++)
      assert.deepEqual(slots[1].read(0, seq, OPCODE, bytes), message(seq), `call ${seq} is intact`);
    assert.equal(slots[1].arrived(0, next, context(SUCCESS_MS)), undefined);
    assert.deepEqual(slots[1].read(0, next, OPCODE, bytes), message(next));
  });
}

test('a message larger than a slot holds goes to one of two data areas, reused once every peer entered the call before', async () => {
  const { slots, status } = pair();
  const bytes = LL_INLINE_BYTES + 4;
  const message = (seq: number) => new Uint8Array(bytes).fill(seq);
  status[0].enter(1);
  status[1].enter(1);
  assert.equal(slots[0].publish(1, OPCODE, bytes, message(1), context(SUCCESS_MS)), undefined);
  status[0].enter(2);
  assert.equal(slots[0].publish(2, OPCODE, bytes, message(2), context(SUCCESS_MS)), undefined);
  // Call 3 reuses call 1's data area while rank 1 has not entered call 2.
  status[0].enter(3);
  const pending = slots[0].publish(3, OPCODE, bytes, message(3), context(SUCCESS_MS));
  assert.ok(pending instanceof Promise, 'the publish must wait');
  assert.deepEqual(slots[1].read(0, 1, OPCODE, bytes), message(1), 'call 1 is still readable');
  status[1].enter(2);
  assert.deepEqual(slots[1].read(0, 2, OPCODE, bytes), message(2));
  await pending;
  assert.deepEqual(slots[1].read(0, 3, OPCODE, bytes), message(3));
  // A small message in between runs ahead of the reader as far as the slots allow.
  status[0].enter(4);
  assert.equal(slots[0].publish(4, OPCODE, 4, new Uint8Array(4).fill(4), context(SUCCESS_MS)), undefined);
  assert.deepEqual([...slots[1].read(0, 4, OPCODE, 4)], [4, 4, 4, 4]);
});

test('a message published without data reads as empty, so a reader that needs data can say who sent none', () => {
  const { slots, status } = pair();
  status[0].enter(1);
  status[1].enter(1);
  slots[0].publish(1, OPCODE, 16, new Uint8Array(16).fill(7), context(SUCCESS_MS));
  slots[0].publish(2, OPCODE, 16, undefined, context(SUCCESS_MS));
  assert.deepEqual([...slots[1].read(0, 1, OPCODE, 16)], new Array(16).fill(7));
  assert.equal(slots[1].read(0, 2, OPCODE, 16).byteLength, 0);
});

test("a peer that enters the call between the publisher's look and its wait is not waited for again", async () => {
  // The lost wake-up that hung an 8-rank all-gather until its timeout: the reader's status word
  // changed after slotReader read it and before the wait took its value, and it changes next only
  // when the reader enters the following call, which needs this message.
  const { slots, status } = pair();
  const next = LL_SLOTS + 1; // reuses call 1's slot
  status[0].enter(next);
  status[1].enter(1);
  const publisher = slots[0] as unknown as {
    slotReader(seq: number, window: number): number;
    slotFreeLater(seq: number, window: number, ctx: WaitContext): Promise<void>;
  };
  const look = publisher.slotReader.bind(publisher);
  publisher.slotReader = (seq, window) => {
    const reader = look(seq, window);
    if (reader >= 0) status[reader].enter(2);
    return reader;
  };
  assert.equal(look(next, LL_SLOTS), 1, 'rank 1 may still read the slot');
  await publisher.slotFreeLater(next, LL_SLOTS, context(SUCCESS_MS));
  slots[0].publish(next, OPCODE, 4, new Uint8Array([3, 3, 3, 3]), context(SUCCESS_MS));
  assert.equal(slots[1].arrived(0, next, context(SUCCESS_MS)), undefined);
  assert.deepEqual([...slots[1].read(0, next, OPCODE, 4)], [3, 3, 3, 3]);
});

test("waiting for a peer that never publishes ends with the context's error, and a message larger than a slot is refused", async () => {
  const { slots, status } = pair();
  status[0].enter(1);
  await assert.rejects(slots[0].arrived(1, 1, context(30))!, /test deadline/);
  assert.throws(() => slots[0].publish(1, OPCODE, LL_SLOT_BYTES + 1, undefined, context(10)), RangeError);
});

test('a message published by reference is read where it lies, and its owner waits until every peer released the call', async () => {
  const { arena, slots, status } = pair();
  status[0].enter(1);
  status[1].enter(1);
  const registered = arena.bytes(arena.allocate(16), 16);
  registered.set([5, 6, 7, 8], 4);
  const data = registered.subarray(4, 8);
  assert.equal(slots[0].readsInPlace(data), true);
  assert.equal(
    slots[0].readsInPlace(new Uint8Array(new SharedArrayBuffer(4))),
    false,
    'shared memory outside the arena is not readable by peers',
  );
  assert.equal(slots[0].publishByReference(1, OPCODE, data, context(SUCCESS_MS)), undefined);
  assert.equal(slots[1].arrived(0, 1, context(SUCCESS_MS)), undefined);
  const read = slots[1].read(0, 1, OPCODE, 4);
  assert.deepEqual([...read], [5, 6, 7, 8]);
  registered[5] = 60;
  assert.equal(read[1], 60, "the reader sees the owner's memory itself, not a copy");
  assert.equal(slots[1].readPeerMemory(1), true, 'the call read memory its owner may take back');
  // Rank 1 has not released call 1, so rank 0 may not touch its data yet.
  const waiting = slots[0].released(1, context(SUCCESS_MS));
  assert.ok(waiting instanceof Promise, 'the owner must wait for the reader');
  let done = false;
  void waiting.then(() => {
    done = true;
  });
  await new Promise((r) => setTimeout(r, 20)); // a chance to be wrong: nothing may end the wait before the release
  assert.equal(done, false);
  slots[1].release(1);
  await waiting;
  // A copied message in the same slot's next use reads as a copy again.
  const next = LL_SLOTS + 1;
  status[0].enter(next);
  status[1].enter(next);
  slots[0].publish(next, OPCODE, 4, new Uint8Array([9, 9, 9, 9]), context(SUCCESS_MS));
  assert.deepEqual([...slots[1].read(0, next, OPCODE, 4)], [9, 9, 9, 9]);
  assert.equal(slots[1].readPeerMemory(next), false);
  await assert.rejects(
    slots[0].released(next, context(30))!,
    /test deadline/,
    `a release of call 1 does not count for call ${next}, which reuses its slot`,
  );
});

test('messages of every size around the inline limit keep their bytes and the header beside them', () => {
  const { slots, status } = pair();
  const sizes = [1, 8, LL_INLINE_BYTES - 1, LL_INLINE_BYTES, LL_INLINE_BYTES + 1, 36, 4096, 8, LL_INLINE_BYTES];
  sizes.push(LL_SLOT_BYTES, 3, 17, LL_INLINE_BYTES - 2, 5, 2);
  sizes.forEach((bytes, i) => {
    const seq = i + 1;
    status[0].enter(seq);
    status[1].enter(seq);
    for (const r of [0, 1]) {
      const data = Uint8Array.from({ length: bytes }, (_, j) => (seq * 31 + r * 7 + j) & 0xff);
      assert.equal(slots[r].publish(seq, OPCODE + r, bytes, data, context(SUCCESS_MS)), undefined, `call ${seq}`);
    }
    for (const r of [0, 1]) {
      const peer = 1 - r;
      assert.equal(slots[r].arrived(peer, seq, context(SUCCESS_MS)), undefined);
      const expected = Array.from({ length: bytes }, (_, j) => (seq * 31 + peer * 7 + j) & 0xff);
      assert.deepEqual([...slots[r].read(peer, seq, OPCODE + peer, bytes)], expected, `${bytes} B of call ${seq}`);
    }
  });
});

test('a peer that published the call before frees the slot, whatever its status word says', () => {
  const { slots, status } = pair();
  status[0].enter(1);
  status[1].enter(1);
  for (let seq = 1; seq <= LL_SLOTS; seq++) {
    status[0].enter(seq);
    slots[0].publish(seq, OPCODE, 4, new Uint8Array(4), context(SUCCESS_MS));
  }
  // Rank 1 publishes call LL_SLOTS (so it is done with call 1) while its status word still says call 1.
  slots[1].publish(LL_SLOTS, OPCODE, 4, new Uint8Array(4), context(SUCCESS_MS));
  const next = LL_SLOTS + 1; // reuses call 1's slot
  status[0].enter(next);
  assert.equal(slots[0].publish(next, OPCODE, 4, new Uint8Array([3, 3, 3, 3]), context(SUCCESS_MS)), undefined);
  assert.deepEqual([...slots[1].read(0, next, OPCODE, 4)], [3, 3, 3, 3]);
});
