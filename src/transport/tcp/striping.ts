import { ErrorCode, TscclError } from '../../errors.js';
import { FLAG_STRIPE, type FrameHeader, type FrameSink, bufferingSink } from './frame.js';
import type { PeerLink } from './peer-link.js';

/**
 * Striping (TSCCL_NSOCKS_PERPEER = K > 1): a message of STRIPE_MIN_BYTES or more travels as K
 * flagged frames, part i on socket i. Part j on socket i belongs to the channel's j-th striped
 * message; socket 0's part fixes the message's place in the channel's order (see frame.ts).
 */

/** K contiguous parts of a message, cut at 64-byte boundaries so every element type stays whole. */
export function stripes(total: number, k: number): [number, number][] {
  const units = Math.ceil(total / 64);
  const cut = (i: number) => Math.min(total, Math.floor((i * units) / k) * 64);
  return Array.from({ length: k }, (_, i) => [cut(i), cut(i + 1)]);
}

/**
 * Where one part of a striped message goes: its assembly. When every part is in, the whole
 * message takes its place in the channel's order and `order.flush` hands on what is ready.
 */
export function openStripe(
  link: PeerLink,
  header: FrameHeader,
  lane: number,
  order: { flush(link: PeerLink, channel: number): void },
): FrameSink {
  if (!(header.flags & FLAG_STRIPE))
    throw new TscclError(
      ErrorCode.MISMATCH,
      `TCP frame error: an unstriped frame on socket ${lane} of rank ${link.peer}`,
      { peer: link.peer },
    );
  const ch = header.channel;
  let counts = link.stripeCounts.get(ch);
  if (counts === undefined) link.stripeCounts.set(ch, (counts = new Array<number>(link.connections.length).fill(0)));
  const number = counts[lane]++;
  let assemblies = link.assemblies.get(ch);
  if (assemblies === undefined) link.assemblies.set(ch, (assemblies = new Map()));
  let assembly = assemblies.get(number);
  if (assembly === undefined)
    assemblies.set(
      number,
      (assembly = { parts: new Array(link.connections.length).fill(undefined), header: undefined, slot: undefined }),
    );
  if (lane === 0) {
    if (ch === 0) link.heardSeq(header.seq);
    assembly.header = header;
    assembly.slot = { frame: undefined };
    let ordered = link.ordered.get(ch);
    if (ordered === undefined) link.ordered.set(ch, (ordered = []));
    ordered.push(assembly.slot);
  }
  const whole = assembly;
  return bufferingSink(header, (frame) => {
    whole.parts[lane] = frame.payload;
    if (whole.slot === undefined || whole.parts.some((p) => p === undefined)) return;
    assemblies.delete(number);
    const payload = Buffer.concat(whole.parts as Buffer[]);
    whole.slot.frame = { header: { ...whole.header!, flags: 0, length: payload.byteLength }, payload };
    order.flush(link, ch);
  });
}
