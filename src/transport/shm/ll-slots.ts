import type { Arena } from '../../memory/arena.js';
import { type LowLatencySlots, type WaitContext, messageMismatch } from '../transport.js';
import { blockUntil, spinUntil, spinUntilEquals, waitWhileEqual, wake } from '../wait.js';
import {
  LL_BYTES,
  LL_CARRIAGE,
  LL_CARRIED_BY_REFERENCE,
  LL_CARRIED_IN_SLOT,
  LL_CARRIED_NONE,
  LL_DATA_OFFSET,
  LL_FLAG,
  LL_INLINE_BYTES,
  LL_INLINE_DATA,
  LL_OPCODE,
  LL_RELEASED,
  LL_SLEEPERS,
  LL_SLOTS,
  LL_SLOT_BYTES,
  STATUS_ENTERED_SEQ,
  STATUS_SLEEPERS,
  llDataIndex,
  llSlotIndex,
} from './mailbox.js';

/**
 * The low-latency protocol of thread ranks (NCCL's LL idea: data and flag travel together, so a
 * message is one write and one read, with no descriptor, no acknowledgement and no wake-up of
 * the sender). Each rank owns LL_SLOTS slots in its mailbox, four cache lines each, and writes
 * call `seq` into slot seq % LL_SLOTS: the data, then the flag = seq. A reader that sees the flag
 * sees the data (Atomics are sequentially consistent). A message of up to 224 bytes travels in
 * the slot, up to 32 of them in the flag's own cache line: a reader that sees the flag has those
 * too, and a writer stores into one line. A larger one goes to one of two data areas, used in
 * turn (seq & 1).
 *
 * No acknowledgement is needed to reuse a slot: the last write into slot seq % LL_SLOTS was for
 * call seq - LL_SLOTS or earlier, and a peer that has entered call seq - LL_SLOTS + 1 (its status
 * word, or its own slot's flag for that call) has finished every call before it, including
 * reading that slot; a data area, by the same rule with 2 in place of LL_SLOTS. Where a call does
 * not wait for every peer (a broadcast's root, see OneShotPlan.eagerAwaits), the root so runs up
 * to LL_SLOTS - 1 calls ahead of its slowest reader with messages in the slot, and one call
 * ahead with larger ones (a data area for every call in flight would cost LL_SLOT_BYTES each).
 * A reader copies a message in the slot out to memory of its own, so its views of messages do
 * not change with the slot.
 *
 * A message whose data already lies in the arena (a registered buffer) can go by reference: the
 * slot then holds its offset, and peers read the data where it lies, so nobody copies it into a
 * slot nor pulls the slot's freshly written lines from the writer's cache. The owner must then
 * keep the data unchanged until every reader has released the call (its slot's released word),
 * which costs one more flag per call and saves a copy of the message per rank.
 */
/**
 * How long a wait may block its thread after spinning, in ms, before it turns asynchronous and
 * checks deadline, signal and peers: bounds how late an abort is noticed.
 */
const BLOCK_MS = 2;

/**
 * Messages of up to this many words are stored and copied out word by word: a few stores cost
 * less than TypedArray.prototype.set, a builtin call; larger ones go through set.
 */
const INLINE_LOOP_WORDS = 8;

/** What read returns for a message that carries no data. */
const NO_DATA = new Uint8Array(0);

/** Whether a peer whose status word says it entered call `entered` may still read the slot call `seq` writes. */
const mayReadSlot = (entered: number, seq: number, window: number) => ((entered - (seq - window + 1)) | 0) < 0;

/** Calls a publication of `bytes` may run ahead of its readers: LL_SLOTS, or 2 where its data goes to a large area. */
const windowOf = (bytes: number, carriage: number) =>
  carriage === LL_CARRIED_IN_SLOT && bytes > LL_INLINE_BYTES ? 2 : LL_SLOTS;

/** How a message travels (an LL_CARRIED_* value), from what publish was given. */
const carriageOf = (bytes: number, data: Uint8Array | undefined, byReferenceOffset: number) =>
  byReferenceOffset >= 0
    ? LL_CARRIED_BY_REFERENCE
    : data === undefined && bytes > 0
      ? LL_CARRIED_NONE
      : LL_CARRIED_IN_SLOT;

export class ShmLowLatencySlots implements LowLatencySlots {
  readonly capacity = LL_SLOT_BYTES;
  readonly eagerRoot = true;
  private readonly arena: Arena;
  private readonly rank: number;
  private readonly nranks: number;
  /** Word offset of each rank's mailbox. */
  private readonly bases: readonly number[];
  private readonly words: Int32Array;
  /** The same memory as bytes. */
  private readonly wordBytes: Uint8Array;
  /**
   * The view of each rank's data areas (index rank * 2 + (seq & 1)), kept while calls repeat a
   * size: a stream of small calls then makes no view per call.
   */
  private readonly dataViews: (Uint8Array | undefined)[];
  /** Where each rank's messages in the slot are copied to when read, and the view last read of it. */
  private readonly inlineCopies: Int32Array[];
  private readonly inlineViews: (Uint8Array | undefined)[];
  /** Each rank's slots' inline data, whole (index rank * LL_SLOTS + slot), what inlineCopy copies a larger message from. */
  private readonly slotData: Int32Array[];
  /** Views of data published by reference, per rank and parity as dataViews, with their byte offsets. */
  private readonly referenceViews: (Uint8Array | undefined)[];
  private readonly referenceOffsets: number[];
  /** The array whose words inlineWords last gave, and those words. */
  private inlineSource: Uint8Array | undefined;
  private inlineSourceWords: Int32Array | undefined;
  /** The last call of which this rank read a message published by reference: only then does it owe a release. */
  private readByReference = 0;

  constructor(arena: Arena, rank: number, mailboxByteOffsets: readonly number[], words: Int32Array) {
    this.arena = arena;
    this.rank = rank;
    this.nranks = mailboxByteOffsets.length;
    this.bases = mailboxByteOffsets.map((b) => b / 4);
    this.words = words;
    this.wordBytes = new Uint8Array(words.buffer, words.byteOffset, words.byteLength);
    this.dataViews = new Array<Uint8Array | undefined>(2 * this.nranks).fill(undefined);
    this.inlineCopies = Array.from({ length: this.nranks }, () => new Int32Array(LL_INLINE_BYTES / 4));
    this.slotData = Array.from({ length: this.nranks * LL_SLOTS }, (_, i) => {
      const at = this.bases[Math.floor(i / LL_SLOTS)] + llSlotIndex(this.nranks, i % LL_SLOTS) + LL_INLINE_DATA;
      return new Int32Array(words.buffer, words.byteOffset + 4 * at, LL_INLINE_BYTES / 4);
    });
    this.inlineViews = new Array<Uint8Array | undefined>(this.nranks).fill(undefined);
    this.referenceViews = new Array<Uint8Array | undefined>(2 * this.nranks).fill(undefined);
    this.referenceOffsets = new Array<number>(2 * this.nranks).fill(-1);
  }

  /** The first `bytes` of `rank`'s data area for call `seq` (a message of more than LL_INLINE_BYTES). */
  private dataView(rank: number, seq: number, bytes: number): Uint8Array {
    const key = 2 * rank + (seq & 1);
    let view = this.dataViews[key];
    if (view === undefined || view.byteLength !== bytes) {
      view = this.arena.bytes((this.bases[rank] + llDataIndex(this.nranks, seq)) * 4, bytes);
      this.dataViews[key] = view;
    }
    return view;
  }

  /** `rank`'s message of `bytes` in its slot for call `seq`, copied out. */
  private inlineCopy(rank: number, seq: number, bytes: number): Uint8Array {
    const copy = this.inlineCopies[rank];
    const n = (bytes + 3) >> 2;
    if (n <= INLINE_LOOP_WORDS) {
      const at = this.bases[rank] + llSlotIndex(this.nranks, seq) + LL_INLINE_DATA;
      for (let i = 0; i < n; i++) copy[i] = this.words[at + i];
    } else copy.set(this.slotData[rank * LL_SLOTS + (seq & (LL_SLOTS - 1))]);
    let view = this.inlineViews[rank];
    if (view === undefined || view.byteLength !== bytes) {
      view = new Uint8Array(copy.buffer, 0, bytes);
      this.inlineViews[rank] = view;
    }
    return view;
  }

  /**
   * `data` as 32-bit words, if it is stored word by word (INLINE_LOOP_WORDS) and its bytes are
   * whole words at a word boundary; the view is kept while calls publish the same array.
   */
  private inlineWords(data: Uint8Array): Int32Array | undefined {
    const bytes = data.byteLength;
    if (bytes > INLINE_LOOP_WORDS * 4 || (bytes & 3) !== 0 || (data.byteOffset & 3) !== 0) return undefined;
    if (this.inlineSource !== data) {
      this.inlineSource = data;
      this.inlineSourceWords = new Int32Array(data.buffer, data.byteOffset, bytes >> 2);
    }
    return this.inlineSourceWords;
  }

  /** `bytes` of the arena at `byteOffset`, which `rank` published by reference for call `seq`. */
  private referenceView(rank: number, seq: number, byteOffset: number, bytes: number): Uint8Array {
    const key = 2 * rank + (seq & 1);
    let view = this.referenceViews[key];
    if (view === undefined || view.byteLength !== bytes || this.referenceOffsets[key] !== byteOffset) {
      view = this.arena.bytes(byteOffset, bytes);
      this.referenceViews[key] = view;
      this.referenceOffsets[key] = byteOffset;
    }
    return view;
  }

  /**
   * The first peer that has not entered call seq - window + 1 (and may still read the slot or
   * large area call seq writes), or -1. A peer that published call seq - 1 in its own slot has entered it; this
   * rank read that flag in call seq - 1 if it waited for that peer, so it is in this core's cache,
   * where the peer's status word, which the peer writes on every call, is not.
   */
  private slotReader(seq: number, window: number): number {
    const previous = llSlotIndex(this.nranks, seq - 1) + LL_FLAG;
    for (let r = 0; r < this.nranks; r++) {
      if (r === this.rank) continue;
      const base = this.bases[r];
      if (Atomics.load(this.words, base + previous) === seq - 1) continue;
      if (mayReadSlot(Atomics.load(this.words, base + STATUS_ENTERED_SEQ), seq, window)) return r;
    }
    return -1;
  }

  publish(
    seq: number,
    opcode: number,
    bytes: number,
    data: Uint8Array | undefined,
    ctx: WaitContext,
  ): Promise<void> | undefined {
    if (bytes > LL_SLOT_BYTES)
      throw new RangeError(`low-latency slot holds ${LL_SLOT_BYTES} bytes, asked for ${bytes}`);
    return this.publishOnceFree(seq, opcode, bytes, data, -1, ctx);
  }

  readsInPlace(data: Uint8Array): boolean {
    return this.arena.contains(data);
  }

  publishByReference(seq: number, opcode: number, data: Uint8Array, ctx: WaitContext): Promise<void> | undefined {
    return this.publishOnceFree(seq, opcode, data.byteLength, undefined, data.byteOffset, ctx);
  }

  /** Writes the slot (see write) once no peer still reads it: at once (undefined), or later. */
  private publishOnceFree(
    seq: number,
    opcode: number,
    bytes: number,
    data: Uint8Array | undefined,
    byReferenceOffset: number,
    ctx: WaitContext,
  ): Promise<void> | undefined {
    const carriage = carriageOf(bytes, data, byReferenceOffset);
    const pending = this.slotFree(seq, windowOf(bytes, carriage), ctx);
    if (pending !== undefined) return this.writeAfter(pending, seq, opcode, bytes, data, byReferenceOffset, carriage);
    this.write(seq, opcode, bytes, data, byReferenceOffset, carriage);
    return undefined;
  }

  /** write once `pending` settles; a method of its own, so that publishOnceFree makes no closure. */
  private writeAfter(
    pending: Promise<void>,
    seq: number,
    opcode: number,
    bytes: number,
    data: Uint8Array | undefined,
    byReferenceOffset: number,
    carriage: number,
  ): Promise<void> {
    return pending.then(() => this.write(seq, opcode, bytes, data, byReferenceOffset, carriage));
  }

  /** Waits until no peer still reads the slot call `seq` reuses: undefined if none does by the end of a brief wait. */
  private slotFree(seq: number, window: number, ctx: WaitContext): Promise<void> | undefined {
    if (this.slotReader(seq, window) < 0) return undefined;
    return this.slotFreeWait(seq, window, ctx);
  }

  /** slotFree once a peer was found reading: spinning, blocking briefly, then asynchronously. */
  private slotFreeWait(seq: number, window: number, ctx: WaitContext): Promise<void> | undefined {
    const free = () => this.slotReader(seq, window) < 0;
    if (spinUntil(free, ctx)) return undefined;
    const reader = this.slotReader(seq, window);
    if (reader < 0) return undefined;
    const base = this.bases[reader];
    if (blockUntil(this.words, base + STATUS_ENTERED_SEQ, base + STATUS_SLEEPERS, free, BLOCK_MS)) return undefined;
    return this.slotFreeLater(seq, window, ctx);
  }

  private async slotFreeLater(seq: number, window: number, ctx: WaitContext): Promise<void> {
    for (let reader = this.slotReader(seq, window); reader >= 0; reader = this.slotReader(seq, window)) {
      const base = this.bases[reader];
      // Wait on the value that was found wanting: a reader that entered since slotReader looked
      // changes its word only when it enters the next call, which needs this very message.
      const entered = Atomics.load(this.words, base + STATUS_ENTERED_SEQ);
      if (mayReadSlot(entered, seq, window))
        await waitWhileEqual(this.words, base + STATUS_ENTERED_SEQ, base + STATUS_SLEEPERS, entered, ctx);
    }
  }

  /** Fills this rank's slot for call `seq`: `data` copied in, or (byReferenceOffset >= 0) where it lies in the arena. */
  private write(
    seq: number,
    opcode: number,
    bytes: number,
    data: Uint8Array | undefined,
    byReferenceOffset: number,
    carriage: number,
  ): void {
    const words = this.words;
    const slot = this.bases[this.rank] + llSlotIndex(this.nranks, seq);
    if (data !== undefined && data.byteLength > 0) {
      const inline = this.inlineWords(data);
      if (inline !== undefined) {
        const at = slot + LL_INLINE_DATA;
        for (let i = 0; i < inline.length; i++) words[at + i] = inline[i];
      } else if (data.byteLength <= LL_INLINE_BYTES) this.wordBytes.set(data, (slot + LL_INLINE_DATA) * 4);
      else this.dataView(this.rank, seq, data.byteLength).set(data);
    }
    // The header shares its cache line with the flag a peer spins on, and each store there pulls
    // the line back from the spinner: a call that repeats the last one's header stores none of it.
    if (words[slot + LL_BYTES] !== bytes) words[slot + LL_BYTES] = bytes;
    if (words[slot + LL_OPCODE] !== opcode) words[slot + LL_OPCODE] = opcode;
    if (words[slot + LL_CARRIAGE] !== carriage) words[slot + LL_CARRIAGE] = carriage;
    if (words[slot + LL_DATA_OFFSET] !== byReferenceOffset) words[slot + LL_DATA_OFFSET] = byReferenceOffset;
    Atomics.store(words, slot + LL_FLAG, seq);
    wake(words, slot + LL_FLAG, slot + LL_SLEEPERS);
  }

  arrived(peer: number, seq: number, ctx: WaitContext): Promise<void> | undefined {
    return this.untilSeq(this.bases[peer] + llSlotIndex(this.nranks, seq), LL_FLAG, seq, ctx);
  }

  release(seq: number): void {
    if (this.readByReference !== seq) return;
    const slot = this.bases[this.rank] + llSlotIndex(this.nranks, seq);
    Atomics.store(this.words, slot + LL_RELEASED, seq);
    wake(this.words, slot + LL_RELEASED, slot + LL_SLEEPERS);
  }

  readPeerMemory(seq: number): boolean {
    return this.readByReference === seq;
  }

  released(seq: number, ctx: WaitContext): Promise<void> | undefined {
    for (let peer = 0; peer < this.nranks; peer++) {
      if (peer === this.rank) continue;
      const pending = this.untilSeq(this.bases[peer] + llSlotIndex(this.nranks, seq), LL_RELEASED, seq, ctx);
      if (pending !== undefined) return this.releasedAfter(pending, seq, ctx);
    }
    return undefined;
  }

  private releasedAfter(pending: Promise<void>, seq: number, ctx: WaitContext): Promise<void> {
    return pending.then(() => this.released(seq, ctx));
  }

  /**
   * Waits until the word `field` of the slot at word `slot` holds `seq`: spinning, then blocking
   * briefly, then asynchronously.
   */
  private untilSeq(slot: number, field: number, seq: number, ctx: WaitContext): Promise<void> | undefined {
    if (spinUntilEquals(this.words, slot + field, seq, ctx)) return undefined;
    return this.untilSeqAsleep(slot, field, seq, ctx);
  }

  /** untilSeq after its spin: blocking briefly, then asynchronously. */
  private untilSeqAsleep(slot: number, field: number, seq: number, ctx: WaitContext): Promise<void> | undefined {
    const index = slot + field;
    const ready = () => Atomics.load(this.words, index) === seq;
    if (blockUntil(this.words, index, slot + LL_SLEEPERS, ready, BLOCK_MS)) return undefined;
    return this.untilSeqLater(slot, field, seq, ctx);
  }

  private async untilSeqLater(slot: number, field: number, seq: number, ctx: WaitContext): Promise<void> {
    for (;;) {
      const flag = Atomics.load(this.words, slot + field);
      if (flag === seq) return;
      await waitWhileEqual(this.words, slot + field, slot + LL_SLEEPERS, flag, ctx);
    }
  }

  read(peer: number, seq: number, opcode: number, bytes: number): Uint8Array {
    const slot = this.bases[peer] + llSlotIndex(this.nranks, seq);
    const sentBytes = this.words[slot + LL_BYTES];
    const sentOpcode = this.words[slot + LL_OPCODE];
    if (sentBytes !== bytes || sentOpcode !== opcode) {
      throw messageMismatch(this.rank, peer, { opcode, seq, bytes }, { opcode: sentOpcode, seq, bytes: sentBytes });
    }
    const carriage = this.words[slot + LL_CARRIAGE];
    if (carriage === LL_CARRIED_BY_REFERENCE) {
      this.readByReference = seq;
      return this.referenceView(peer, seq, this.words[slot + LL_DATA_OFFSET] >>> 0, bytes);
    }
    // The call alone: a reader that needs its data called another root, which the caller reports.
    if (carriage === LL_CARRIED_NONE) return NO_DATA;
    return bytes <= LL_INLINE_BYTES ? this.inlineCopy(peer, seq, bytes) : this.dataView(peer, seq, bytes);
  }
}
