import { QUEUED_CHANNELS } from '../channels.js';

/**
 * Layout of a rank's mailbox for one communicator, in the shared arena. The receiver owns it;
 * peers post descriptors into it. For each (source rank, queued channel: see channels.ts) there is one FIFO queue:
 *
 *   int32[0]       head: descriptors posted so far (written by the sender)
 *   int32[1]       threads asleep on head (wait.ts wake: the sender notifies only if there are any)
 *   int32[16]      consumed: descriptors read so far (written by the receiver), on its own cache line
 *   int32[17]      threads asleep on consumed
 *   slots[DEPTH]   { byteOffset u32, bytes u32, seq i32, opcode i32, crc32 u32, flags, -, - } of the sender's data
 *
 * Counters run on and wrap as int32; differences are taken with |0. The mailbox starts with the
 * owner's status block, which peers read to say who has not arrived or who failed, and ends with
 * the owner's LL_SLOTS low-latency slots (see ll-slots.ts), each four cache lines:
 *
 *   int32[0]       flag: the collective sequence number whose data the slot holds
 *   int32[1..2]    bytes, opcode of that call
 *   int32[3..4]    how the data travels (LL_CARRIED_IN_SLOT, LL_CARRIED_BY_REFERENCE with the data's byte offset in
 *                  the arena, or LL_CARRIED_NONE: the call alone), and that offset or -1
 *   int32[5]       released: the last call whose messages the owner has read (of this slot's calls)
 *   int32[6]       threads asleep on the flag or released word
 *   int32[8..63]   a message of up to 224 bytes (LL_INLINE_BYTES): up to 32 in the flag's cache line
 *
 * A larger message (up to LL_SLOT_BYTES) goes to the owner's data area seq & 1 (two in all).
 */
export const QUEUE_DEPTH = 64;

export const HEAD = 0;
export const HEAD_SLEEPERS = 1;
export const CONSUMED = 16;
export const CONSUMED_SLEEPERS = 17;
const SLOTS = 32;
const SLOT_WORDS = 8;
/** Slot flag: crc32 holds the checksum of the bytes as posted. */
export const SLOT_CHECKSUM = 1;
export const QUEUE_WORDS = SLOTS + QUEUE_DEPTH * SLOT_WORDS;

/**
 * Status block words. The owner stores the first line's words on every call; the failure words
 * sit on a line of their own, which peers read-modify-write (status.ts failedBefore) on calls
 * that read peer memory and the owner writes only when it gives up, so those reads do not pull
 * the owner's hot line away from it on every call.
 */
export const STATUS_ENTERED_SEQ = 0; // seq of the last collective this rank started
/** A shrink's meeting point: the epoch a rank has reached, and its new mailbox's byte offset. */
export const STATUS_SHRINK_EPOCH = 3;
export const STATUS_SHRINK_MAILBOX = 4;
/** The last collective this rank ended successfully: nothing it shared for that call is read any more. */
export const STATUS_ENDED_SEQ = 6;
/**
 * How many members have closed this communicator. Each adds one to every member's mailbox as
 * its last touch of them, so the owner may reuse its mailbox once this reaches the group size.
 */
export const STATUS_CLOSED = 7;
/** Threads asleep on STATUS_ENTERED_SEQ (on its cache line, for wait.ts wake). */
export const STATUS_SLEEPERS = 8;
export const STATUS_FAILED = 16; // 0, or the error's wire number (errors.ts) once this rank gave up on the communicator
export const STATUS_FAILED_SEQ = 17;
/** The rank whose failure started it all (this rank, or the peer whose failure it saw). */
export const STATUS_FAILED_ORIGIN = 18;
const STATUS_WORDS = 32;

/** Bytes one rank can publish through the low-latency path: the largest one-shot collective. */
export const LL_SLOT_BYTES = 64 * 1024;
/** Words of a low-latency slot: the header's cache line and three more of inline data. */
export const LL_SLOT_WORDS = 64;
export const LL_FLAG = 0;
export const LL_BYTES = 1;
export const LL_OPCODE = 2;
/** How the message's data travels: one of the LL_CARRIED_* values. */
export const LL_CARRIAGE = 3;
/** In the slot: its inline words or its data area (nothing, for a call of no bytes). */
export const LL_CARRIED_IN_SLOT = 0;
/** In the arena where it lies, at the byte offset of word LL_DATA_OFFSET. */
export const LL_CARRIED_BY_REFERENCE = 1;
/** Not at all: the call alone, from a rank that holds no data for it. */
export const LL_CARRIED_NONE = 2;
export const LL_DATA_OFFSET = 4;
export const LL_RELEASED = 5;
export const LL_SLEEPERS = 6;
/** A message of up to LL_INLINE_BYTES travels in the slot from this word on, in the flag's cache line first. */
export const LL_INLINE_DATA = 8;
export const LL_INLINE_BYTES = (LL_SLOT_WORDS - LL_INLINE_DATA) * 4;
/**
 * Low-latency slots per rank, used in turn (a power of two): how many calls a broadcast's root
 * may publish before its slowest reader has read the first (ll-slots.ts).
 */
export const LL_SLOTS = 64;
const LL_DATA_WORDS = LL_SLOT_BYTES / 4;

/** Word index of the first low-latency slot. */
function llStart(maxRanks: number): number {
  return STATUS_WORDS + maxRanks * QUEUED_CHANNELS * QUEUE_WORDS;
}

/** Word index of the low-latency slot (a header, with up to LL_INLINE_BYTES of data) used by collective `seq`. */
export function llSlotIndex(maxRanks: number, seq: number): number {
  return llStart(maxRanks) + (seq & (LL_SLOTS - 1)) * LL_SLOT_WORDS;
}

/** Word index of the data area collective `seq` copies a message of more than LL_INLINE_BYTES into. */
export function llDataIndex(maxRanks: number, seq: number): number {
  return llStart(maxRanks) + LL_SLOTS * LL_SLOT_WORDS + (seq & 1) * LL_DATA_WORDS;
}

export function mailboxWords(maxRanks: number): number {
  return llDataIndex(maxRanks, 0) + 2 * LL_DATA_WORDS;
}

/** Word index of the queue from `source` on `channel` inside a mailbox. */
export function queueIndex(source: number, channel: number): number {
  return STATUS_WORDS + (source * QUEUED_CHANNELS + channel) * QUEUE_WORDS;
}

export function slotIndex(queue: number, ticket: number): number {
  return queue + SLOTS + (ticket & (QUEUE_DEPTH - 1)) * SLOT_WORDS;
}
