import { setFlagsFromString } from 'node:v8';

// V8's own checks of how it stores objects, which the code that keeps shapes alike is for.
// Turned on at run time for the functions made below (V8 parses `%` calls only with the flag).
setFlagsFromString('--allow-natives-syntax');

/** Whether V8 gives `a` and `b` the same hidden class (map): code compiled for one runs on the other. */
export const sameShape = new Function('a', 'b', 'return %HaveSameMap(a, b)') as (a: unknown, b: unknown) => boolean;

/** Whether the array's elements may be any value, holes included: V8's most general elements kind. */
export const holdsAnyValue = new Function('a', 'return %HasObjectElements(a) && %HasHoleyElements(a)') as (
  a: unknown[],
) => boolean;
