import { Arena } from '../memory/arena.js';

/**
 * The arena of the last finished thread job of this process, kept for the next job. A job's
 * arena is a shared WebAssembly.Memory; dropped, it is freed only when the launcher's garbage
 * collector next runs, and V8 does not count that memory as pressure on the launcher, so a
 * process that launched job after job grew by each one's arena (three 8-rank 64 MiB all-gathers:
 * 1.1, 2.1, 3.2 GB resident). Kept, the next job reuses its pages, as a caching allocator keeps
 * device memory between calls. One is kept (the larger, when jobs ran side by side).
 */
let idle: Arena | undefined;

/** An arena for a new job: the kept one, emptied, or a new one. */
export function takeArena(): Arena {
  const kept = idle;
  idle = undefined;
  return kept === undefined ? Arena.create() : Arena.recycle(kept);
}

/**
 * Keeps a finished job's arena for the next job; every thread that mapped it has exited. Not if
 * the job's results hold shared memory: a rank may have returned a view into the arena, which the
 * next job would overwrite.
 */
export function keepArena(arena: Arena, results: readonly unknown[]): void {
  if (holdsSharedMemory(results, new Set())) return;
  if (idle !== undefined && idle.memory.buffer.byteLength >= arena.memory.buffer.byteLength) return;
  idle = arena;
}

/** Does `value` (a structured clone's result: arrays, plain objects, maps, sets, views) reach shared memory? */
function holdsSharedMemory(value: unknown, seen: Set<object>): boolean {
  if (typeof value !== 'object' || value === null || seen.has(value)) return false;
  seen.add(value);
  if (value instanceof SharedArrayBuffer || value instanceof WebAssembly.Memory) return true;
  if (ArrayBuffer.isView(value)) return value.buffer instanceof SharedArrayBuffer;
  if (value instanceof ArrayBuffer) return false;
  const parts =
    value instanceof Map
      ? [...value.keys(), ...value.values()]
      : value instanceof Set
        ? [...value]
        : Object.values(value);
  return parts.some((part) => holdsSharedMemory(part, seen));
}
