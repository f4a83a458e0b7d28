/**
 * An array of `length` undefined slots (none by default) that V8 already stores as holding any
 * value, holes included (its most general elements kind). A `[]` starts as small integers only
 * and changes kind at its first object, string or gap; code V8 optimised on arrays that had
 * changed (those of init's warm-up) is thrown away when it meets an array that has not (one made
 * before the warm-up, the world's), and recompiled on the rank's thread in the middle of a call
 * (docs/tuning.md, "Arrays of one kind"). Sized up front, stores into it never grow it either.
 */
export function anyValueArray<T>(length = 0): T[] {
  const array = new Array<T>(Math.max(1, length));
  array.fill(undefined as T);
  array.length = length;
  return array;
}
