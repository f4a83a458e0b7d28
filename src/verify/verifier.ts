import {
  type BufferId,
  type CallShape,
  MIN_SEND_QUEUE_DEPTH,
  type Schedule,
  type Slice,
  type Step,
} from '../algorithms/schedule.js';
import { checkPostcondition } from './postcondition.js';
import { type Value, rankMemory } from './symbolic-memory.js';

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
    ({ memory: this.memory, base: this.base, size: this.size } = rankMemory(shape, rank, schedule.scratchCount));
    this.pc = schedule.channels.map(() => 0);
    this.knows = new Set([rank]);
  }

  where(s: Slice, rank: number, errors: string[]): number {
    if (s.offset < 0 || s.count < 0 || s.offset + s.count > this.size[s.buf]) {
      errors.push(
        `rank ${rank}: slice ${s.buf}[${s.offset}, +${s.count}) is outside ${s.buf} of ${this.size[s.buf]} elements`,
      );
      return -1;
    }
    return this.base[s.buf] + s.offset;
  }

  /** Would writing [start, start+count) overwrite data a posted send still covers? */
  blockedWrite(start: number, count: number): boolean {
    return this.pendingSends.some(
      (m) => !m.consumed && m.count > 0 && start < m.start + m.count && m.start < start + count,
    );
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
        const message: Message = {
          from: rank,
          start,
          count: step.src.count,
          knows: new Set(me.knows),
          consumed: false,
        };
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
          errors.push(
            `rank ${rank}: ${step.kind} of ${step.dst.count} elements from rank ${step.peer} matched a send of ${message.count}`,
          );
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

  const stuck = ranks.flatMap((me, r) =>
    me.schedule.channels.flatMap((steps, ch) =>
      me.pc[ch] < steps.length ? [`rank ${r} channel ${ch} step ${me.pc[ch]} (${describe(steps[me.pc[ch]])})`] : [],
    ),
  );
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
    case 'send':
      return `send to ${step.peer}`;
    case 'recv':
      return `recv from ${step.peer}`;
    case 'recvReduce':
      return `recvReduce from ${step.peer}`;
    default:
      return step.kind;
  }
}
