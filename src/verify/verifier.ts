import { allToAllLayout } from '../algorithms/all-to-all-layout.js';
import {
  type BufferId, type CallShape, MIN_SEND_QUEUE_DEPTH, type Schedule, type Slice, type Step, bufferCounts, inPlaceLayout,
} from '../algorithms/schedule.js';

/**
 * Runs every rank's schedule symbolically and checks the collective's postcondition. Each element
 * holds the sorted list of input elements ("tokens") folded into it, so a reduction that misses
 * or double-counts a contribution, a block delivered to the wrong place, an input clobbered in an
 * out-of-place call, an out-of-bounds slice, a count mismatch or a deadlock (at the minimum
 * queue depth transports promise) are all found. A barrier is checked by knowledge: a rank may
 * finish only after hearing, directly or not, from every rank.
 */
export interface VerifyResult {
  readonly ok: boolean;
  readonly errors: string[];
}

type Value = readonly number[] | null;
const TOKEN_STRIDE = 1 << 24;
const token = (rank: number, index: number) => rank * TOKEN_STRIDE + index;
const tokenName = (t: number) => `r${Math.floor(t / TOKEN_STRIDE)}[${t % TOKEN_STRIDE}]`;

interface Message {
  readonly from: number;
  readonly start: number;
  readonly count: number;
  readonly knows: ReadonlySet<number>;
  consumed: boolean;
}

class RankState {
  readonly memory: Value[];
  readonly base: Record<BufferId, number>;
  readonly size: Record<BufferId, number>;
  readonly pc: number[];
  readonly pendingSends: Message[] = [];
  readonly schedule: Schedule;
  knows: Set<number>;

  constructor(schedule: Schedule, shape: CallShape, rank: number) {
    this.schedule = schedule;
    const counts = bufferCounts(shape, rank);
    const scratch = schedule.scratchCount;
    if (shape.inPlace) {
      const layout = inPlaceLayout(shape, rank);
      const outer: BufferId = layout.inner === 'input' ? 'output' : 'input';
      const outerSize = Math.max(counts[outer], layout.offset + counts[layout.inner]);
      this.base = { [outer]: 0, [layout.inner]: layout.offset, scratch: outerSize } as Record<BufferId, number>;
      this.memory = new Array<Value>(outerSize + scratch).fill(null);
    } else {
      this.base = { input: 0, output: counts.input, scratch: counts.input + counts.output };
      this.memory = new Array<Value>(counts.input + counts.output + scratch).fill(null);
    }
    this.size = { input: counts.input, output: counts.output, scratch };
    for (let i = 0; i < counts.input; i++) this.memory[this.base.input + i] = [token(rank, i)];
    this.pc = schedule.channels.map(() => 0);
    this.knows = new Set([rank]);
  }

  where(s: Slice, rank: number, errors: string[]): number {
    if (s.offset < 0 || s.count < 0 || s.offset + s.count > this.size[s.buf]) {
      errors.push(`rank ${rank}: slice ${s.buf}[${s.offset}, +${s.count}) is outside ${s.buf} of ${this.size[s.buf]} elements`);
      return -1;
    }
    return this.base[s.buf] + s.offset;
  }

  /** Would writing [start, start+count) overwrite data a posted send still covers? */
  blockedWrite(start: number, count: number): boolean {
    return this.pendingSends.some((m) => !m.consumed && m.count > 0 && start < m.start + m.count && m.start < start + count);
  }
}

const merge = (a: Value, b: Value): Value => (a === null || b === null ? null : [...a, ...b].sort((x, y) => x - y));

export function verifySchedules(shapes: readonly CallShape[], schedules: readonly Schedule[]): VerifyResult {
  const n = shapes.length;
  const errors: string[] = [];
  const ranks = schedules.map((s, r) => new RankState(s, shapes[r], r));
  const queues = new Map<string, Message[]>();
  const queue = (from: number, to: number, ch: number) => {
    const key = `${from}>${to}#${ch}`;
    let q = queues.get(key);
    if (q === undefined) queues.set(key, (q = []));
    return q;
  };
  const peerOk = (rank: number, peer: number) => {
    if (Number.isInteger(peer) && peer >= 0 && peer < n && peer !== rank) return true;
    errors.push(`rank ${rank}: peer ${peer} is not another rank of ${n}`);
    return false;
  };

  // One attempt at a step: true if it ran, false if it must wait.
  const tryStep = (rank: number, ch: number, step: Step): boolean => {
    const me = ranks[rank];
    switch (step.kind) {
      case 'send': {
        if (!peerOk(rank, step.peer)) return true;
        const q = queue(rank, step.peer, ch);
        if (q.filter((m) => !m.consumed).length >= MIN_SEND_QUEUE_DEPTH) return false;
        const start = me.where(step.src, rank, errors);
        const message: Message = { from: rank, start, count: step.src.count, knows: new Set(me.knows), consumed: false };
        q.push(message);
        me.pendingSends.push(message);
        return true;
      }
      case 'recv':
      case 'recvReduce': {
        if (!peerOk(rank, step.peer)) return true;
        const q = queue(step.peer, rank, ch);
        const message = q.find((m) => !m.consumed);
        if (message === undefined) return false;
        const dst = me.where(step.dst, rank, errors);
        if (dst >= 0 && me.blockedWrite(dst, step.dst.count)) return false;
        message.consumed = true;
        if (message.count !== step.dst.count) {
          errors.push(`rank ${rank}: ${step.kind} of ${step.dst.count} elements from rank ${step.peer} matched a send of ${message.count}`);
          return true;
        }
        const src = step.kind === 'recvReduce' ? me.where(step.src, rank, errors) : 0;
        if (dst < 0 || src < 0 || message.start < 0) return true;
        const sender = ranks[step.peer].memory;
        const incoming = sender.slice(message.start, message.start + message.count);
        const own = me.memory.slice(src, src + step.dst.count);
        for (let i = 0; i < step.dst.count; i++) {
          me.memory[dst + i] = step.kind === 'recv' ? incoming[i] : merge(own[i], incoming[i]);
        }
        for (const k of message.knows) me.knows.add(k);
        return true;
      }
      case 'copy':
      case 'reduce': {
        const srcs = step.kind === 'copy' ? [step.src] : step.srcs;
        const dst = me.where(step.dst, rank, errors);
        const starts = srcs.map((s) => me.where(s, rank, errors));
        if (srcs.some((s) => s.count !== step.dst.count)) {
          errors.push(`rank ${rank}: ${step.kind} sources and destination differ in length`);
          return true;
        }
        if (dst < 0 || starts.some((s) => s < 0)) return true;
        if (me.blockedWrite(dst, step.dst.count)) return false;
        const values = starts.map((s) => me.memory.slice(s, s + step.dst.count));
        for (let i = 0; i < step.dst.count; i++) {
          me.memory[dst + i] = values.map((v) => v[i]).reduce((a, b) => merge(a, b));
        }
        return true;
      }
    }
  };

  let progress = true;
  while (progress && errors.length === 0) {
    progress = false;
    for (let r = 0; r < n; r++) {
      const me = ranks[r];
      me.schedule.channels.forEach((steps, ch) => {
        while (me.pc[ch] < steps.length && tryStep(r, ch, steps[me.pc[ch]])) {
          me.pc[ch]++;
          progress = true;
        }
      });
    }
  }
  if (errors.length > 0) return { ok: false, errors };

  const stuck = ranks.flatMap((me, r) => me.schedule.channels.flatMap((steps, ch) =>
    me.pc[ch] < steps.length ? [`rank ${r} channel ${ch} step ${me.pc[ch]} (${describe(steps[me.pc[ch]])})`] : []));
  if (stuck.length > 0) return { ok: false, errors: [`deadlock: ${stuck.join('; ')}`] };
  for (const [key, q] of queues) {
    const left = q.filter((m) => !m.consumed).length;
    if (left > 0) errors.push(`queue ${key}: ${left} send(s) never received`);
  }
  checkPostcondition(shapes, ranks, errors);
  return { ok: errors.length === 0, errors };
}

function describe(step: Step): string {
  switch (step.kind) {
    case 'send': return `send to ${step.peer}`;
    case 'recv': return `recv from ${step.peer}`;
    case 'recvReduce': return `recvReduce from ${step.peer}`;
    default: return step.kind;
  }
}

function checkPostcondition(shapes: readonly CallShape[], ranks: readonly RankState[], errors: string[]): void {
  const n = shapes.length;
  const all = (index: number) => Array.from({ length: n }, (_, r) => token(r, index));
  ranks.forEach((me, rank) => {
    const shape = shapes[rank];
    const c = shape.count;
    const expectOutput = (index: number, want: readonly number[]) => {
      const got = me.memory[me.base.output + index];
      if (got === null || got.length !== want.length || got.some((t, i) => t !== want[i])) {
        if (errors.length < 20) {
          errors.push(`rank ${rank}: output[${index}] holds ${got === null ? 'nothing' : got.map(tokenName).join('+')}, expected ${want.map(tokenName).join('+')}`);
        }
      }
    };
    switch (shape.collective) {
      case 'allReduce': for (let i = 0; i < c; i++) expectOutput(i, all(i)); break;
      case 'reduce': if (rank === shape.root) for (let i = 0; i < c; i++) expectOutput(i, all(i)); break;
      case 'reduceScatter': for (let i = 0; i < c; i++) expectOutput(i, all(rank * c + i)); break;
      case 'broadcast': for (let i = 0; i < c; i++) expectOutput(i, [token(shape.root, i)]); break;
      case 'allGather': for (let p = 0; p < n; p++) for (let i = 0; i < c; i++) expectOutput(p * c + i, [token(p, i)]); break;
      case 'gather': if (rank === shape.root) for (let p = 0; p < n; p++) for (let i = 0; i < c; i++) expectOutput(p * c + i, [token(p, i)]); break;
      case 'scatter': for (let i = 0; i < c; i++) expectOutput(i, [token(shape.root, rank * c + i)]); break;
      case 'allToAll': {
        const mine = allToAllLayout(shape);
        for (let p = 0; p < n; p++) {
          const theirs = allToAllLayout(shapes[p]);
          for (let i = 0; i < mine.recvCounts[p]; i++) expectOutput(mine.recvDispls[p] + i, [token(p, theirs.sendDispls[rank] + i)]);
        }
        break;
      }
      case 'barrier':
        if (me.knows.size !== n) errors.push(`rank ${rank}: left the barrier without hearing from ranks ${all(0).map((t) => t / TOKEN_STRIDE).filter((r) => !me.knows.has(r)).join(', ')}`);
        break;
    }
    if (!shape.inPlace) {
      for (let i = 0; i < me.size.input; i++) {
        const v = me.memory[me.base.input + i];
        if (v === null || v.length !== 1 || v[0] !== token(rank, i)) {
          errors.push(`rank ${rank}: input[${i}] was overwritten in an out-of-place call`);
          break;
        }
      }
    }
  });
}
