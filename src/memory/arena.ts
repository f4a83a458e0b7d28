import { ErrorCode, TscclError } from '../errors.js';
import { addExtent, freeExtentUnits, takeExtent, takeExtentEndingAt } from './free-extents.js';

/**
 * The job's registered memory: one shared WebAssembly.Memory that every rank thread of the
 * process maps. Peers read each other's buffers in place through it, and (later) WASM SIMD
 * kernels run on it directly. Its first page is the job's control block.
 *
 * Allocation: a global bump pointer, moved under a spin lock in the control block, hands out
 * 64-byte-aligned blocks. Sizes are rounded up to a size class (64-byte steps up to 4 KiB, then
 * eight classes per power of two, so at most 1/8 more), as caching allocators do: each thread
 * keeps up to THREAD_CACHE_BYTES of the blocks it frees, by class, and a freed block serves the
 * next request of its class without the lock. Blocks past that go to the free ranges every thread
 * shares (free-extents.ts), where neighbours merge and any larger or smaller request can take
 * them; at the 4 GiB limit a thread gives its whole cache there too. So a job whose sizes vary
 * (staging of plain arrays of many sizes, variable batch shapes) reuses memory across classes and
 * threads instead of holding a block of every class in every thread.
 */
const PAGE = 65536;
const MAX_PAGES = 65536; // 4 GiB, the wasm32 limit
const ALIGN = 64;
const HEADER_BYTES = PAGE;
/**
 * Freed bytes a thread keeps for itself, by class (more go to the shared free ranges). 8 thread
 * ranks making calls of every size up to 4 MiB, several in flight, ran out of the 4 GiB arena when
 * each thread kept all it freed: 374-418 MB free per thread in 156-159 classes, 150 MB live.
 */
const THREAD_CACHE_BYTES = 64 << 20;

/** Int32 slots of the control block. */
const LOCK = 0;
const BUMP = 1; // in units of ALIGN bytes, so 4 GiB fits an int32
const LOST_COUNT = 2; // how many ranks of the job have been marked lost
// Slot 3 (free-extents.ts EXTENT_COUNT) counts the shared free ranges, whose table follows CONTROL_WORDS.
const HIGH_WATER = 4; // the furthest the bump pointer has been (it moves back when the top is freed)
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
  /**
   * The buffer's length as this thread last saw it. Read instead of the buffer's own: every buffer
   * of a grown memory has a new hidden class, and code V8 compiled to read the old one's length
   * was thrown away at each rank's first call after the arena grew.
   */
  private bufferBytes: number;
  private control: Int32Array;
  private readonly freeBlocks = new Map<number, number[]>();
  /** Bytes in freeBlocks; -0, a double, as the block sizes added to it may be (a field that changes kind changes the arena's shape). */
  private cachedBytes = -0;
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
    this.bufferBytes = this.buffer.byteLength;
    this.seenBuffers.add(this.buffer);
    this.control = new Int32Array(this.buffer, 0, HEADER_BYTES / 4);
  }

  static create(initialBytes = 16 << 20): Arena {
    const initial = Math.max(2, Math.ceil(initialBytes / PAGE));
    return Arena.empty(new WebAssembly.Memory({ initial, maximum: MAX_PAGES, shared: true }));
  }

  /**
   * A finished job's memory as a new arena: every byte the job was handed is zeroed (a new
   * memory's bytes are zero, and mailboxes count on it; the bytes past the furthest the bump
   * pointer went were never handed out), the control block starts over, and the pages stay
   * mapped, so a job that needs no more than this one did takes no memory from the system. Only
   * once no thread maps the memory any more.
   */
  static recycle(finished: Arena): Arena {
    finished.refresh();
    const used = Atomics.load(finished.control, HIGH_WATER) * ALIGN;
    new Uint8Array(finished.buffer, 0, used).fill(0);
    return Arena.empty(finished.memory);
  }

  /** An arena over zeroed memory: nothing handed out, the bump pointer past the control page. */
  private static empty(memory: WebAssembly.Memory): Arena {
    const arena = new Arena(memory);
    Atomics.store(arena.control, BUMP, HEADER_BYTES / ALIGN);
    Atomics.store(arena.control, HIGH_WATER, HEADER_BYTES / ALIGN);
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
    return (
      jobRank >= 0 &&
      jobRank < MAX_TRACKED_RANKS &&
      (Atomics.load(this.control, LOST_BITS + (jobRank >> 5)) & (1 << (jobRank & 31))) !== 0
    );
  }

  /** Int32 words over the whole arena as far as `endByte`, for shared counters and mailboxes. */
  int32Covering(endByte: number): Int32Array {
    if (endByte > this.bufferBytes) this.refresh();
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
      this.cachedBytes -= size;
      this.sizes.set(offset, size);
      return offset;
    }
    this.lock();
    try {
      let offset = this.takeShared(size) ?? this.bump(size);
      if (offset === undefined) {
        this.giveCacheLocked();
        offset = this.takeShared(size) ?? this.bump(size);
      }
      if (offset === undefined) {
        // Below the bump pointer, the shared free ranges are free too.
        const inUse = (Atomics.load(this.control, BUMP) - freeExtentUnits(this.control)) * ALIGN;
        throw new TscclError(
          ErrorCode.OUT_OF_MEMORY,
          `Cannot allocate ${bytes} bytes: the shared arena is limited to 4 GiB and ${inUse} bytes are in use (buffers from comm.alloc return when comm.free is called or, later, when they are garbage collected)`,
          { argument: 'count' },
        );
      }
      this.sizes.set(offset, size);
      return offset;
    } finally {
      this.unlock();
    }
  }

  /** Returns a block to this thread's free lists, or past THREAD_CACHE_BYTES to the shared free ranges. */
  free(offset: number): void {
    const size = this.sizes.get(offset);
    if (size === undefined) return;
    this.sizes.delete(offset);
    if (this.cachedBytes + size <= THREAD_CACHE_BYTES) {
      this.cache(offset, size);
      return;
    }
    this.lock();
    try {
      if (!this.shareLocked(offset, size)) this.cache(offset, size);
    } finally {
      this.unlock();
    }
  }

  private cache(offset: number, size: number): void {
    let list = this.freeBlocks.get(size);
    if (list === undefined) this.freeBlocks.set(size, (list = []));
    list.push(offset);
    this.cachedBytes += size;
  }

  /** Under the lock: a block of the shared free ranges, or undefined. */
  private takeShared(size: number): number | undefined {
    const start = takeExtent(this.control, size / ALIGN);
    return start === undefined ? undefined : start * ALIGN;
  }

  /** Under the lock: new memory past the bump pointer (growing the memory), or undefined at the 4 GiB limit. */
  private bump(size: number): number | undefined {
    const offset = Atomics.load(this.control, BUMP) * ALIGN;
    const end = offset + size;
    if (end > MAX_PAGES * PAGE) return undefined;
    const have = this.memory.buffer.byteLength;
    if (end > have) this.memory.grow(Math.ceil((end - have) / PAGE));
    Atomics.store(this.control, BUMP, end / ALIGN);
    if (end / ALIGN > Atomics.load(this.control, HIGH_WATER)) Atomics.store(this.control, HIGH_WATER, end / ALIGN);
    return offset;
  }

  /**
   * Under the lock: adds a block to the shared free ranges (false if the table is full); a range
   * that then ends at the bump pointer moves the pointer back instead.
   */
  private shareLocked(offset: number, size: number): boolean {
    if (!addExtent(this.control, offset / ALIGN, size / ALIGN)) return false;
    const start = takeExtentEndingAt(this.control, Atomics.load(this.control, BUMP));
    if (start !== undefined) Atomics.store(this.control, BUMP, start);
    return true;
  }

  /** Under the lock: every block of this thread's free lists to the shared free ranges. */
  private giveCacheLocked(): void {
    for (const [size, list] of this.freeBlocks) {
      while (list.length > 0 && this.shareLocked(list[list.length - 1], size)) {
        list.pop();
        this.cachedBytes -= size;
      }
    }
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
  view<T extends ArrayBufferView>(
    ctor: new (buffer: SharedArrayBuffer, byteOffset: number, length: number) => T,
    byteOffset: number,
    length: number,
    bytesPerElement: number,
  ): T {
    if (byteOffset + length * bytesPerElement > this.bufferBytes) this.refresh();
    return new ctor(this.buffer, byteOffset, length);
  }

  bytes(byteOffset: number, length: number): Uint8Array {
    return this.view(Uint8Array, byteOffset, length, 1);
  }

  /** Allocation whose block returns to the free list when `release` is called or the view is garbage collected. */
  allocateOwned<T extends ArrayBufferView>(
    ctor: new (buffer: SharedArrayBuffer, byteOffset: number, length: number) => T,
    length: number,
    bytesPerElement: number,
  ): T {
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

  /**
   * Makes this thread's next view take the path it takes after another thread grew the memory
   * (it reads the memory's buffer again). Init's warm-up runs that path once on every rank, so
   * that V8 has seen it before it compiles `view` into the hot path: never taken before, it threw
   * away every function `view` was compiled into at each rank's first call after the arena grew
   * (docs/tuning.md, "Arrays of one kind").
   */
  forgetBufferLength(): void {
    this.bufferBytes = 0;
  }

  private refresh(): void {
    this.buffer = this.memory.buffer as unknown as SharedArrayBuffer;
    this.bufferBytes = this.buffer.byteLength;
    this.seenBuffers.add(this.buffer);
    this.control = new Int32Array(this.buffer, 0, HEADER_BYTES / 4);
  }

  private lock(): void {
    while (Atomics.compareExchange(this.control, LOCK, 0, 1) !== 0) Atomics.wait(this.control, LOCK, 1, 1);
  }

  private unlock(): void {
    Atomics.store(this.control, LOCK, 0);
    Atomics.notify(this.control, LOCK, 1);
  }
}
