import { ErrorCode, TscclError } from '../errors.js';

/**
 * The job's registered memory: one shared WebAssembly.Memory that every rank thread of the
 * process maps. Peers read each other's buffers in place through it, and (later) WASM SIMD
 * kernels run on it directly. Its first page is the job's control block.
 *
 * Allocation: a global bump pointer, moved under a spin lock in the control block, hands out
 * 64-byte-aligned blocks; each thread keeps the blocks it frees, by size, for reuse. Sizes are
 * rounded up to a size class (64-byte steps up to 4 KiB, then eight classes per power of two, so
 * at most 1/8 more), as caching allocators do: a freed block then serves every later request of
 * its class, and a job whose sizes vary (staging of plain arrays of many sizes, variable batch
 * shapes) reuses a bounded set of blocks instead of taking new memory until the 4 GiB limit.
 */
const PAGE = 65536;
const MAX_PAGES = 65536; // 4 GiB, the wasm32 limit
const ALIGN = 64;
const HEADER_BYTES = PAGE;

/** Int32 slots of the control block. */
const LOCK = 0;
const BUMP = 1; // in units of ALIGN bytes, so 4 GiB fits an int32
const LOST_COUNT = 2; // how many ranks of the job have been marked lost
const LOST_BITS = 16; // bitmap of lost job ranks, from here on
const MAX_TRACKED_RANKS = 4096;
export const CONTROL_WORDS = LOST_BITS + MAX_TRACKED_RANKS / 32;

/** Bytes a request of `bytes` takes: 64-byte steps up to 4 KiB, then eight classes per power of two. */
export function sizeClass(bytes: number): number {
  if (bytes <= 4096) return Math.max(ALIGN, Math.ceil(bytes / ALIGN) * ALIGN);
  const step = 2 ** (Math.floor(Math.log2(bytes)) - 3);
  return Math.ceil(bytes / step) * step;
}

export class Arena {
  readonly memory: WebAssembly.Memory;
  private buffer: SharedArrayBuffer;
  private control: Int32Array;
  private readonly freeBlocks = new Map<number, number[]>();
  private readonly sizes = new Map<number, number>();
  private readonly seenBuffers = new WeakSet<SharedArrayBuffer>();
  private readonly finalizer = new FinalizationRegistry<number>((offset) => this.free(offset));
  /** Blocks to free once their condition holds (peers may still use them), checked before taking new memory. */
  private deferred: { offset: number; ready: () => boolean }[] = [];
  /** Blocks of allocateOwned views still live, by view. */
  private readonly owned = new WeakMap<ArrayBufferView, number>();

  private constructor(memory: WebAssembly.Memory) {
    this.memory = memory;
    this.buffer = memory.buffer as unknown as SharedArrayBuffer;
    this.seenBuffers.add(this.buffer);
    this.control = new Int32Array(this.buffer, 0, CONTROL_WORDS);
  }

  static create(initialBytes = 16 << 20): Arena {
    const initial = Math.max(2, Math.ceil(initialBytes / PAGE));
    return Arena.empty(new WebAssembly.Memory({ initial, maximum: MAX_PAGES, shared: true }));
  }

  /**
   * A finished job's memory as a new arena: every byte the job was handed is zeroed (a new
   * memory's bytes are zero, and mailboxes count on it; the bytes past the bump pointer were
   * never handed out), the control block starts over, and the pages stay mapped, so a job that
   * needs no more than this one did takes no memory from the system. Only once no thread maps
   * the memory any more.
   */
  static recycle(finished: Arena): Arena {
    finished.refresh();
    const used = Atomics.load(finished.control, BUMP) * ALIGN;
    new Uint8Array(finished.buffer, 0, used).fill(0);
    return Arena.empty(finished.memory);
  }

  /** An arena over zeroed memory: nothing handed out, the bump pointer past the control page. */
  private static empty(memory: WebAssembly.Memory): Arena {
    const arena = new Arena(memory);
    Atomics.store(arena.control, BUMP, HEADER_BYTES / ALIGN);
    return arena;
  }

  /** The same arena seen from another thread. */
  static attach(memory: WebAssembly.Memory): Arena {
    return new Arena(memory);
  }

  get controlWords(): Int32Array {
    return this.control;
  }

  /** Marks a job rank as lost (its thread died), for every communicator that includes it. */
  markLost(jobRank: number): void {
    if (jobRank < 0 || jobRank >= MAX_TRACKED_RANKS || this.isLost(jobRank)) return;
    Atomics.or(this.control, LOST_BITS + (jobRank >> 5), 1 << (jobRank & 31));
    Atomics.add(this.control, LOST_COUNT, 1);
  }

  /** Has any rank been marked lost? (One load: the common answer is no.) */
  anyLost(): boolean {
    return Atomics.load(this.control, LOST_COUNT) !== 0;
  }

  isLost(jobRank: number): boolean {
    return jobRank >= 0 && jobRank < MAX_TRACKED_RANKS && (Atomics.load(this.control, LOST_BITS + (jobRank >> 5)) & (1 << (jobRank & 31))) !== 0;
  }

  /** Int32 words over the whole arena as far as `endByte`, for shared counters and mailboxes. */
  int32Covering(endByte: number): Int32Array {
    if (endByte > this.buffer.byteLength) this.refresh();
    return new Int32Array(this.buffer);
  }

  /** Allocates `bytes` (rounded up to its size class), returning the byte offset in the arena. */
  allocate(bytes: number): number {
    const size = sizeClass(bytes);
    let reusable = this.freeBlocks.get(size);
    if ((reusable === undefined || reusable.length === 0) && this.deferred.length > 0) {
      this.freeReady();
      reusable = this.freeBlocks.get(size);
    }
    if (reusable !== undefined && reusable.length > 0) {
      const offset = reusable.pop()!;
      this.sizes.set(offset, size);
      return offset;
    }
    this.lock();
    try {
      const offset = Atomics.load(this.control, BUMP) * ALIGN;
      const end = offset + size;
      if (end > MAX_PAGES * PAGE) {
        throw new TscclError(ErrorCode.OUT_OF_MEMORY,
          `Cannot allocate ${bytes} bytes: the shared arena is limited to 4 GiB and ${offset} bytes are in use (buffers from comm.alloc return when comm.free is called or, later, when they are garbage collected)`, { argument: 'count' });
      }
      const have = this.memory.buffer.byteLength;
      if (end > have) this.memory.grow(Math.ceil((end - have) / PAGE));
      Atomics.store(this.control, BUMP, end / ALIGN);
      this.sizes.set(offset, size);
      return offset;
    } finally {
      this.unlock();
    }
  }

  /** Returns a block to this thread's free lists. */
  free(offset: number): void {
    const size = this.sizes.get(offset);
    if (size === undefined) return;
    this.sizes.delete(offset);
    let list = this.freeBlocks.get(size);
    if (list === undefined) this.freeBlocks.set(size, (list = []));
    list.push(offset);
  }

  /**
   * Frees a block of this thread's once `ready()` says nobody else uses it any more, as checked
   * before the arena would take new memory (other threads may hold it for a while yet).
   */
  freeWhen(offset: number, ready: () => boolean): void {
    this.deferred.push({ offset, ready });
  }

  private freeReady(): void {
    const waiting = [];
    for (const block of this.deferred) {
      if (block.ready()) this.free(block.offset);
      else waiting.push(block);
    }
    this.deferred = waiting;
  }

  /** A typed view of arena bytes; sees growth made by any thread. */
  view<T extends ArrayBufferView>(ctor: new (buffer: SharedArrayBuffer, byteOffset: number, length: number) => T, byteOffset: number, length: number, bytesPerElement: number): T {
    if (byteOffset + length * bytesPerElement > this.buffer.byteLength) this.refresh();
    return new ctor(this.buffer, byteOffset, length);
  }

  bytes(byteOffset: number, length: number): Uint8Array {
    return this.view(Uint8Array, byteOffset, length, 1);
  }

  /** Allocation whose block returns to the free list when `release` is called or the view is garbage collected. */
  allocateOwned<T extends ArrayBufferView>(ctor: new (buffer: SharedArrayBuffer, byteOffset: number, length: number) => T, length: number, bytesPerElement: number): T {
    const offset = this.allocate(length * bytesPerElement);
    const view = this.view(ctor, offset, length, bytesPerElement);
    this.finalizer.register(view, offset, view);
    this.owned.set(view, offset);
    return view;
  }

  /**
   * Returns an `allocateOwned` block now rather than at garbage collection; false if `view` is not
   * a live one of this thread (never allocated so, or released already).
   */
  release(view: ArrayBufferView): boolean {
    const offset = this.owned.get(view);
    if (offset === undefined) return false;
    this.owned.delete(view);
    // Unregistered, or the view's collection would free the block again after its reuse.
    this.finalizer.unregister(view);
    this.free(offset);
    return true;
  }

  /**
   * Is this view's memory inside the arena (so peers can read it in place)? Growing a shared wasm
   * memory gives a new buffer object over the same memory, so every object this thread has seen
   * counts; a view from elsewhere is staged, which is slower but always correct.
   */
  contains(view: ArrayBufferView): boolean {
    if (!(view.buffer instanceof SharedArrayBuffer)) return false;
    if (!this.seenBuffers.has(view.buffer)) this.refresh();
    return this.seenBuffers.has(view.buffer);
  }

  private refresh(): void {
    this.buffer = this.memory.buffer as unknown as SharedArrayBuffer;
    this.seenBuffers.add(this.buffer);
    this.control = new Int32Array(this.buffer, 0, CONTROL_WORDS);
  }

  private lock(): void {
    while (Atomics.compareExchange(this.control, LOCK, 0, 1) !== 0) Atomics.wait(this.control, LOCK, 1, 1);
  }

  private unlock(): void {
    Atomics.store(this.control, LOCK, 0);
    Atomics.notify(this.control, LOCK, 1);
  }
}
