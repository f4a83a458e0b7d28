import {
  type BufferId,
  type InPlaceLayout,
  type Schedule,
  type Slice,
  type Step,
  outerBuffer,
} from '../algorithms/schedule.js';
import { WrittenRanges } from './written-ranges.js';

export const STEP_SEND = 0;
export const STEP_RECV = 1;
export const STEP_LOCAL = 2;
/** A receive that reduces into the destination: free on GPUs (fused), computed on CPU ranks. */
export const STEP_RECV_REDUCE = 3;

/**
 * One channel of one rank's schedule in the form the simulator walks: step kind, peer and bytes
 * in typed arrays. A transfer's bytes are its payload; so are a local step's (the bytes it
 * writes), whose `peers` entry is instead how many sources it reads, so that the simulator can
 * price it as memory traffic (a GPU's bandwidth counts reads and writes) or as a CPU core's
 * measured copy and reduction speeds (which count the bytes written). Thousands of ranks'
 * schedules fit in memory this way; the Step objects are dropped as soon as they are converted.
 */
export interface Program {
  readonly kinds: Uint8Array;
  readonly peers: Int32Array;
  readonly bytes: Float64Array;
  /**
   * With `trackFresh`: 1 at a send whose source this rank wrote (received, reduced or copied
   * into) earlier in the channel, so it sits in the cache of the core that wrote it.
   */
  readonly fresh?: Uint8Array;
  /**
   * With `trackFresh`: at a step that writes (receives, reduces or copies into) data, how many
   * of its bytes a peer has read since this rank last wrote them, counting the previous call of
   * a run of calls. A core that writes a line another core read must first take it back from
   * that core's cache (an invalidation), which costs a CPU rank time on top of the write.
   */
  readonly peerReadWrites?: Float64Array;
  /** With `keepSlices`: per step, the first element of the slice it sends or writes, and how many. */
  readonly slices?: { readonly offsets: Float64Array; readonly counts: Float64Array };
}

/**
 * Programs of a schedule; `inPlace`, the call's layout when its input is its output, makes the
 * cache accounting (`trackFresh`) see the two buffers as the memory they share.
 */
export function programsOf(
  schedule: Schedule,
  elementBytes: number,
  trackFresh = false,
  keepSlices = false,
  inPlace?: InPlaceLayout,
): Program[] {
  return schedule.channels.map((scheduled) => {
    const steps = inPlace === undefined || !trackFresh ? scheduled : scheduled.map((s) => inStorage(s, inPlace));
    const slices = keepSlices ? sliceTable(steps) : undefined;
    const kinds = new Uint8Array(steps.length);
    const peers = new Int32Array(steps.length);
    const bytes = new Float64Array(steps.length);
    steps.forEach((step, i) => {
      switch (step.kind) {
        case 'send':
          kinds[i] = STEP_SEND;
          peers[i] = step.peer;
          bytes[i] = step.src.count * elementBytes;
          break;
        case 'recv':
          kinds[i] = STEP_RECV;
          peers[i] = step.peer;
          bytes[i] = step.dst.count * elementBytes;
          break;
        case 'recvReduce':
          kinds[i] = STEP_RECV_REDUCE;
          peers[i] = step.peer;
          bytes[i] = step.dst.count * elementBytes;
          break;
        case 'copy':
          kinds[i] = STEP_LOCAL;
          peers[i] = 1;
          bytes[i] = step.dst.count * elementBytes;
          break;
        case 'reduce':
          kinds[i] = STEP_LOCAL;
          peers[i] = step.srcs.length;
          bytes[i] = step.dst.count * elementBytes;
          break;
      }
    });
    const program: Program = trackFresh
      ? { kinds, peers, bytes, fresh: freshSends(steps), peerReadWrites: peerReadWrites(steps, elementBytes) }
      : { kinds, peers, bytes };
    return slices === undefined ? program : { ...program, slices };
  });
}

/** Which elements each step moves: a send's source, any other step's destination. */
function sliceTable(steps: readonly Step[]): { offsets: Float64Array; counts: Float64Array } {
  const offsets = new Float64Array(steps.length);
  const counts = new Float64Array(steps.length);
  steps.forEach((step, i) => {
    const moved = step.kind === 'send' ? step.src : step.dst;
    offsets[i] = moved.offset;
    counts[i] = moved.count;
  });
  return { offsets, counts };
}

/**
 * A step with the slices of an in-place call's inner buffer renamed to the outer one, at their
 * place in it: a copy back into the output then writes what a peer read of the input.
 */
function inStorage(step: Step, layout: InPlaceLayout): Step {
  const outer = outerBuffer(layout);
  const at = (slice: Slice): Slice =>
    slice.buf === layout.inner ? { buf: outer, offset: slice.offset + layout.offset, count: slice.count } : slice;
  switch (step.kind) {
    case 'send':
      return { ...step, src: at(step.src) };
    case 'recv':
      return { ...step, dst: at(step.dst) };
    case 'recvReduce':
    case 'copy':
      return { ...step, dst: at(step.dst), src: at(step.src) };
    case 'reduce':
      return { ...step, dst: at(step.dst), srcs: step.srcs.map(at) };
  }
}

/** Per step, 1 at a send of data the channel's earlier steps wrote. */
function freshSends(steps: readonly Step[]): Uint8Array {
  const fresh = new Uint8Array(steps.length);
  const written = new Map<BufferId, WrittenRanges>();
  const rangesOf = (buf: BufferId) => {
    let ranges = written.get(buf);
    if (ranges === undefined) written.set(buf, (ranges = new WrittenRanges()));
    return ranges;
  };
  steps.forEach((step, i) => {
    if (step.kind === 'send') {
      fresh[i] = written.get(step.src.buf)?.overlaps(step.src.offset, step.src.count) ? 1 : 0;
    } else {
      rangesOf(step.dst.buf).add(step.dst.offset, step.dst.count);
    }
  });
  return fresh;
}

/**
 * Per step, the bytes it writes that a peer read since they were last written: each send (a
 * peer reading the slice) counts against the next step, going round the channel as repeated
 * calls do, that writes an overlapping slice. A slice sent to several peers costs its writer
 * once, as one invalidation reaches every core that holds the line. One walk of two laps: the
 * first lap's sends wait, by buffer, for the write that takes them back, which comes at most
 * one lap later.
 */
function peerReadWrites(steps: readonly Step[], elementBytes: number): Float64Array {
  const charged = new Float64Array(steps.length);
  const waiting = new Map<BufferId, WaitingReads>();
  /** Per charged step, the sent slices it has been charged for (offset:count). */
  const chargedFor = new Map<number, Set<string>>();
  for (let k = 0; k < 2 * steps.length; k++) {
    const j = k % steps.length;
    const step = steps[j];
    if (step.kind === 'send') {
      if (k < steps.length)
        (waiting.get(step.src.buf) ?? waiting.set(step.src.buf, new WaitingReads()).get(step.src.buf)!).add(step.src);
      continue;
    }
    const { offset, count } = step.dst;
    for (const read of waiting.get(step.dst.buf)?.takeOverlapping(offset, count) ?? []) {
      const key = `${read.offset}:${read.count}`;
      const keys = chargedFor.get(j) ?? chargedFor.set(j, new Set()).get(j)!;
      if (keys.has(key)) continue;
      keys.add(key);
      const overlap = Math.min(read.offset + read.count, offset + count) - Math.max(read.offset, offset);
      charged[j] = Math.min(count, charged[j] / elementBytes + overlap) * elementBytes;
    }
  }
  return charged;
}

/**
 * Sent slices of one buffer not yet written again, sorted by offset, so that a write finds
 * those it overlaps by binary search: a pipelined ring leaves hundreds waiting at once.
 */
class WaitingReads {
  private readonly slices: Slice[] = [];
  /** No waiting slice is longer, so none that starts more than this before a write reaches it. */
  private longest = 0;

  add(slice: Slice): void {
    this.slices.splice(this.firstStartingFrom(slice.offset), 0, slice);
    this.longest = Math.max(this.longest, slice.count);
  }

  /** Removes and returns the waiting slices that share an element with [offset, offset + count), in order. */
  takeOverlapping(offset: number, count: number): Slice[] {
    const taken: Slice[] = [];
    let i = this.firstStartingFrom(offset - this.longest + 1);
    while (i < this.slices.length && this.slices[i].offset < offset + count) {
      const slice = this.slices[i];
      if (slice.offset + slice.count > offset) {
        taken.push(slice);
        this.slices.splice(i, 1);
      } else {
        i++;
      }
    }
    return taken;
  }

  /** Index of the first slice whose offset is at least `offset`. */
  private firstStartingFrom(offset: number): number {
    let low = 0;
    let high = this.slices.length;
    while (low < high) {
      const mid = (low + high) >> 1;
      if (this.slices[mid].offset < offset) low = mid + 1;
      else high = mid;
    }
    return low;
  }
}
