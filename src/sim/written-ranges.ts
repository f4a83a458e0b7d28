/**
 * The element ranges of one buffer that a rank has written so far in a call, kept sorted and
 * merged, so that asking whether a slice touches any of them costs a binary search: a rank's
 * schedule can have thousands of steps.
 */
export class WrittenRanges {
  private readonly starts: number[] = [];
  private readonly ends: number[] = [];

  /** Whether [offset, offset + count) shares an element with what was written. */
  overlaps(offset: number, count: number): boolean {
    if (count <= 0) return false;
    // The last range starting before the slice's end is the only one that can reach into it.
    const at = this.lastStartingBefore(offset + count);
    return at >= 0 && this.ends[at] > offset;
  }

  add(offset: number, count: number): void {
    if (count <= 0) return;
    let start = offset;
    let end = offset + count;
    // Ranges that overlap or touch [start, end) merge with it.
    const last = this.lastStartingBefore(end + 1);
    let first = last;
    while (first >= 0 && this.ends[first] >= start) {
      start = Math.min(start, this.starts[first]);
      end = Math.max(end, this.ends[first]);
      first--;
    }
    // Ranges first..last merge into the new one; none when first is last + 1 (an insertion).
    first++;
    this.starts.splice(first, last - first + 1, start);
    this.ends.splice(first, last - first + 1, end);
  }

  /** Index of the last range whose start is below `position`, or -1. */
  private lastStartingBefore(position: number): number {
    let low = 0;
    let high = this.starts.length;
    while (low < high) {
      const mid = (low + high) >> 1;
      if (this.starts[mid] < position) low = mid + 1;
      else high = mid;
    }
    return low - 1;
  }
}
