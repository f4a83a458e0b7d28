/**
 * Free ranges of the shared arena that any thread may reuse: [start, length] pairs in units of
 * the arena's alignment, sorted by start, kept in the arena's control page and changed only under
 * its lock. A freed range merges with its neighbours, so blocks that different threads freed, of
 * different size classes, become one range a larger request can take.
 */

/** Int32 slot of the control page that holds how many ranges there are. */
export const EXTENT_COUNT = 3;
/** First int32 slot of the table: two per range. */
export const EXTENT_TABLE = 160;

/** How many ranges a control page of `words` int32 slots holds. */
export function extentCapacity(words: number): number {
  return Math.floor((words - EXTENT_TABLE) / 2);
}

const startOf = (w: Int32Array, i: number): number => w[EXTENT_TABLE + 2 * i];
const lengthOf = (w: Int32Array, i: number): number => w[EXTENT_TABLE + 2 * i + 1];
function put(w: Int32Array, i: number, start: number, length: number): void {
  w[EXTENT_TABLE + 2 * i] = start;
  w[EXTENT_TABLE + 2 * i + 1] = length;
}
function remove(w: Int32Array, i: number): void {
  const count = w[EXTENT_COUNT];
  w.copyWithin(EXTENT_TABLE + 2 * i, EXTENT_TABLE + 2 * (i + 1), EXTENT_TABLE + 2 * count);
  w[EXTENT_COUNT] = count - 1;
}

/** Adds [start, start + length), merged with the ranges it touches; false if it fits nowhere (the table is full). */
export function addExtent(w: Int32Array, start: number, length: number): boolean {
  const count = w[EXTENT_COUNT];
  let lo = 0;
  let hi = count;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if (startOf(w, mid) < start) lo = mid + 1;
    else hi = mid;
  }
  const joinsBefore = lo > 0 && startOf(w, lo - 1) + lengthOf(w, lo - 1) === start;
  const joinsAfter = lo < count && start + length === startOf(w, lo);
  if (joinsBefore && joinsAfter) {
    put(w, lo - 1, startOf(w, lo - 1), lengthOf(w, lo - 1) + length + lengthOf(w, lo));
    remove(w, lo);
  } else if (joinsBefore) {
    put(w, lo - 1, startOf(w, lo - 1), lengthOf(w, lo - 1) + length);
  } else if (joinsAfter) {
    put(w, lo, start, length + lengthOf(w, lo));
  } else {
    if (count >= extentCapacity(w.length)) return false;
    w.copyWithin(EXTENT_TABLE + 2 * (lo + 1), EXTENT_TABLE + 2 * lo, EXTENT_TABLE + 2 * count);
    put(w, lo, start, length);
    w[EXTENT_COUNT] = count + 1;
  }
  return true;
}

/** Takes `length` from the start of the smallest range that holds it; undefined if none does. */
export function takeExtent(w: Int32Array, length: number): number | undefined {
  let best = -1;
  for (let i = 0; i < w[EXTENT_COUNT]; i++) {
    const l = lengthOf(w, i);
    if (l >= length && (best < 0 || l < lengthOf(w, best))) best = i;
  }
  if (best < 0) return undefined;
  const start = startOf(w, best);
  if (lengthOf(w, best) === length) remove(w, best);
  else put(w, best, start + length, lengthOf(w, best) - length);
  return start;
}

/** How much the ranges hold in all. */
export function freeExtentUnits(w: Int32Array): number {
  let units = 0;
  for (let i = 0; i < w[EXTENT_COUNT]; i++) units += lengthOf(w, i);
  return units;
}

/** Removes the last range if it ends at `end` and returns its start (the arena's bump pointer can move back there). */
export function takeExtentEndingAt(w: Int32Array, end: number): number | undefined {
  const last = w[EXTENT_COUNT] - 1;
  if (last < 0 || startOf(w, last) + lengthOf(w, last) !== end) return undefined;
  const start = startOf(w, last);
  remove(w, last);
  return start;
}
