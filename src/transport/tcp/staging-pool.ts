/**
 * Memory a checksummed frame for a reduction is read into whole before it is reduced (with
 * resend on, a reduction may take only bytes known intact). Buffers come from the transport's
 * read memory (the arena, where the reduction kernels read in place) in power-of-two sizes and
 * go back to the pool when their frame ends, so frames of a size seen before allocate nothing.
 */
export class StagingPool {
  private readonly allocate: (bytes: number) => Uint8Array;
  private readonly free = new Map<number, Uint8Array[]>();

  constructor(allocate: (bytes: number) => Uint8Array) {
    this.allocate = allocate;
  }

  /** A buffer of at least `bytes` (its whole capacity: use the first `bytes`). */
  take(bytes: number): Uint8Array {
    const capacity = 2 ** Math.ceil(Math.log2(Math.max(bytes, 4096)));
    return this.free.get(capacity)?.pop() ?? this.allocate(capacity);
  }

  /** Returns a buffer from take() once nothing reads into it any more. */
  give(buffer: Uint8Array): void {
    let list = this.free.get(buffer.byteLength);
    if (list === undefined) this.free.set(buffer.byteLength, (list = []));
    list.push(buffer);
  }
}
