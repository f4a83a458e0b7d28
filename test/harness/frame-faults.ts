import { type OutgoingFrame, setSendHookForTests } from '../../src/transport/tcp/send-path.js';

/**
 * Fault injection into TCP frames, for tests: TSCCL_TEST_FAULT=<flip|cut>@<rank>#<n> makes rank
 * <rank>'s n-th frame to another process (counted per transport) arrive with one bit flipped
 * (after its checksum was taken), or cuts that rank's connection halfway through the frame;
 * flipevery@<rank>#<n> flips a bit in every n-th frame, a steady bit-error rate; cutevery@<rank>#<n>
 * cuts the connection in every n-th frame, a link that keeps breaking; cutonce@<rank>#<n> cuts as
 * cut does, in the first mesh only (a call run again over new connections goes through).
 * A fixture imports this module; it installs the hook in its process when the variable is set.
 * Frames are counted per connection mesh from the job's start, and init's warm-up meets over a
 * mesh of its own: tests that set this also set TSCCL_WARMUP_MS=0, so the fault hits their call.
 * A fault due on a frame that carries no data to break (a barrier's) waits for that sender's next
 * frame that does, so a test's fault never vanishes when the calls before it change.
 */
export interface FrameFault {
  readonly kind: 'flip' | 'cut' | 'flipevery' | 'cutevery' | 'cutonce';
  readonly rank: number;
  readonly frame: number;
}

export function parseFrameFault(spec: string | undefined): FrameFault | undefined {
  const m = /^(flip|cut|flipevery|cutevery|cutonce)@(\d+)#(\d+)$/.exec(spec ?? '');
  return m === null ? undefined : { kind: m[1] as FrameFault['kind'], rank: Number(m[2]), frame: Number(m[3]) };
}

/** Installs a send hook that applies `fault` once; undefined removes the hook. */
export function injectFrameFault(fault: FrameFault | undefined): void {
  if (fault === undefined) {
    setSendHookForTests(undefined);
    return;
  }
  const sent = new WeakMap<object, number>();
  const due = new WeakSet<object>();
  let cut = false;
  setSendHookForTests((out: OutgoingFrame) => {
    if (out.rank !== fault.rank || (fault.kind === 'cutonce' && cut)) return false;
    const n = (sent.get(out.sender) ?? 0) + 1;
    sent.set(out.sender, n);
    if (fault.kind.endsWith('every') ? n % fault.frame === 0 : n === fault.frame) due.add(out.sender);
    if (!due.has(out.sender) || out.data.byteLength <= 1 || out.socket.destroyed) return false;
    due.delete(out.sender);
    cut = true;
    out.socket.write(out.header());
    if (!fault.kind.startsWith('cut')) {
      const corrupt = Uint8Array.from(out.data);
      corrupt[0] ^= 1;
      out.socket.write(corrupt, () => out.delivered());
    } else {
      // The first half as sent, then nothing: the peer reads a prefix of the stream, as TCP
      // delivers it when a link breaks. The send path keeps a copy of the frame, so the caller's
      // memory is free at once.
      out.socket.write(out.data.subarray(0, out.data.byteLength >> 1));
      out.socket.destroy();
      out.delivered();
    }
    return true;
  });
}

injectFrameFault(parseFrameFault(process.env.TSCCL_TEST_FAULT));
