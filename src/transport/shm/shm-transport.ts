import { ErrorCode, TscclError } from '../../errors.js';
import type { Arena } from '../../memory/arena.js';
import { MIN_SEND_QUEUE_DEPTH } from '../../algorithms/schedule.js';
import { ShmLowLatencySlots } from './ll-slots.js';
import {
  type Consume,
  type MessageTag,
  type SendHandle,
  type Transport,
  type WaitContext,
  messageMismatch,
  opcodeName,
} from '../transport.js';
import { waitWhileEqual, wake } from '../wait.js';
import { crc32 } from '../../kernels/crc32.js';
import {
  CONSUMED,
  CONSUMED_SLEEPERS,
  HEAD,
  HEAD_SLEEPERS,
  QUEUE_DEPTH,
  SLOT_CHECKSUM,
  queueIndex,
  slotIndex,
} from './mailbox.js';

if (QUEUE_DEPTH < MIN_SEND_QUEUE_DEPTH || (QUEUE_DEPTH & (QUEUE_DEPTH - 1)) !== 0) {
  throw new Error('shm QUEUE_DEPTH must be a power of two of at least MIN_SEND_QUEUE_DEPTH');
}

/**
 * Ranks that are threads of one process. A send posts a descriptor of the sender's arena bytes
 * into the receiver's mailbox; the receiver reads (or reduces) straight from the sender's memory
 * and bumps `consumed`, which releases the sender's buffer. One copy, reduction fused into it.
 */
export class ShmTransport implements Transport {
  readonly rank: number;
  readonly nranks: number;
  private readonly arena: Arena;
  /** Word offset of each rank's mailbox in the arena. */
  private readonly mailboxes: readonly number[];
  private readonly sendTickets: Int32Array;
  private readonly recvTickets: Int32Array;
  private readonly channels: number;
  private readonly words: Int32Array;
  readonly lowLatency: ShmLowLatencySlots;

  constructor(
    arena: Arena,
    rank: number,
    mailboxByteOffsets: readonly number[],
    mailboxBytes: number,
    channels: number,
  ) {
    this.arena = arena;
    this.rank = rank;
    this.nranks = mailboxByteOffsets.length;
    this.mailboxes = mailboxByteOffsets.map((b) => b / 4);
    this.channels = channels;
    this.sendTickets = new Int32Array(this.nranks * channels);
    this.recvTickets = new Int32Array(this.nranks * channels);
    this.words = arena.int32Covering(Math.max(...mailboxByteOffsets) + mailboxBytes);
    this.lowLatency = new ShmLowLatencySlots(arena, rank, mailboxByteOffsets, this.words);
  }

  async send(peer: number, channel: number, data: Uint8Array, tag: MessageTag, ctx: WaitContext): Promise<SendHandle> {
    for (;;) {
      const handle = this.trySend(peer, channel, data, tag);
      if (handle !== undefined) return handle;
      const queue = this.mailboxes[peer] + queueIndex(this.rank, channel);
      const consumed = Atomics.load(this.words, queue + CONSUMED);
      await waitWhileEqual(this.words, queue + CONSUMED, queue + CONSUMED_SLEEPERS, consumed, ctx);
    }
  }

  trySend(peer: number, channel: number, data: Uint8Array, tag: MessageTag): SendHandle | undefined {
    const words = this.words;
    const queue = this.mailboxes[peer] + queueIndex(this.rank, channel);
    const ticket = this.sendTickets[peer * this.channels + channel];
    if (((ticket - Atomics.load(words, queue + CONSUMED)) | 0) >= QUEUE_DEPTH) return undefined;
    const slot = slotIndex(queue, ticket);
    words[slot] = data.byteOffset;
    words[slot + 1] = data.byteLength;
    words[slot + 2] = tag.seq;
    words[slot + 3] = tag.opcode;
    words[slot + 4] = tag.checksum ? crc32(data) : 0;
    words[slot + 5] = tag.checksum ? SLOT_CHECKSUM : 0;
    const next = (ticket + 1) | 0;
    this.sendTickets[peer * this.channels + channel] = next;
    Atomics.store(words, queue + HEAD, next);
    wake(words, queue + HEAD, queue + HEAD_SLEEPERS);
    return { peer, channel, ticket: next };
  }

  async recv(
    peer: number,
    channel: number,
    bytes: number,
    elementBytes: number,
    tag: MessageTag,
    consume: Consume,
    ctx: WaitContext,
  ): Promise<void> {
    while (!this.tryRecv(peer, channel, bytes, elementBytes, tag, consume)) {
      const queue = this.mailboxes[this.rank] + queueIndex(peer, channel);
      const ticket = this.recvTickets[peer * this.channels + channel];
      await waitWhileEqual(this.words, queue + HEAD, queue + HEAD_SLEEPERS, ticket, ctx);
    }
  }

  tryRecv(
    peer: number,
    channel: number,
    bytes: number,
    _elementBytes: number,
    tag: MessageTag,
    consume: Consume,
  ): boolean {
    const words = this.words;
    const queue = this.mailboxes[this.rank] + queueIndex(peer, channel);
    const ticket = this.recvTickets[peer * this.channels + channel];
    if (Atomics.load(words, queue + HEAD) === ticket) return false;
    const slot = slotIndex(queue, ticket);
    const byteOffset = words[slot] >>> 0;
    const length = words[slot + 1] >>> 0;
    const seq = words[slot + 2];
    const opcode = words[slot + 3];
    if (length !== bytes || seq !== tag.seq || opcode !== tag.opcode) {
      throw messageMismatch(
        this.rank,
        peer,
        { opcode: tag.opcode, seq: tag.seq, bytes },
        { opcode, seq, bytes: length },
      );
    }
    if (length > 0) {
      const data = this.arena.bytes(byteOffset, length);
      if (words[slot + 5] & SLOT_CHECKSUM) this.verify(data, words[slot + 4] >>> 0, peer, tag, byteOffset);
      consume(data, 0);
    }
    this.recvTickets[peer * this.channels + channel] = (ticket + 1) | 0;
    Atomics.store(words, queue + CONSUMED, (ticket + 1) | 0);
    wake(words, queue + CONSUMED, queue + CONSUMED_SLEEPERS);
    return true;
  }

  /**
   * The receiver reads the sender's memory in place, so a mismatch means the sender's bytes changed
   * after it posted them (a race in the caller). Read once more, as a retransmission would, then fail.
   */
  private verify(data: Uint8Array, expected: number, peer: number, tag: MessageTag, byteOffset: number): void {
    if (crc32(data) >>> 0 === expected || crc32(data) >>> 0 === expected) return;
    throw new TscclError(
      ErrorCode.CHECKSUM,
      `Rank ${this.rank}: ${opcodeName(tag.opcode)} #${tag.seq} data from rank ${peer} (${data.byteLength} bytes at arena offset ${byteOffset}) changed after it was sent: its checksum no longer matches`,
      { rank: this.rank, peer, op: opcodeName(tag.opcode), seq: tag.seq, offset: byteOffset },
    );
  }

  isDelivered(handle: SendHandle): boolean {
    const queue = this.mailboxes[handle.peer] + queueIndex(this.rank, handle.channel);
    return ((Atomics.load(this.words, queue + CONSUMED) - handle.ticket) | 0) >= 0;
  }

  async waitDelivered(handle: SendHandle, ctx: WaitContext): Promise<void> {
    const words = this.words;
    const queue = this.mailboxes[handle.peer] + queueIndex(this.rank, handle.channel);
    for (;;) {
      const consumed = Atomics.load(words, queue + CONSUMED);
      if (((consumed - handle.ticket) | 0) >= 0) return;
      await waitWhileEqual(words, queue + CONSUMED, queue + CONSUMED_SLEEPERS, consumed, ctx);
    }
  }
}
