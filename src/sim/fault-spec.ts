import { parseSize } from '../algorithms/bench-ops.js';
import { invalidArgument } from '../errors.js';

/**
 * What `tsccl sim --faults` injects, and the recovery it prices (tsccl's own: a frame that fails
 * its CRC is sent again, a path that fails hands its traffic to the paths left).
 */
export interface FaultSpec {
  /** Bit error rate of every network link (between hosts); 0 = none. */
  readonly ber: number;
  /** Devices (a NIC, a switch) or links (`a/b`: one cable of that bundle) that fail. */
  readonly down: readonly string[];
  /** When they fail, as a fraction of the clean call's time; 0: before the call (the job has failed over already). */
  readonly at: number;
  /** How long a failed path takes to be noticed, ms. */
  readonly detectMs: number;
  /** How often a corrupted frame is asked for again before the call fails (TSCCL_RESEND_RETRIES). */
  readonly retries: number;
  /** The largest frame: tsccl's pipelining piece (TSCCL_CHUNK_BYTES). A smaller call's frame is its share per rank. */
  readonly frameBytes: number;
  /** Unacknowledged bytes per peer a failed path leaves to send again over the others (TSCCL_RESEND_WINDOW_BYTES). */
  readonly windowBytes: number;
}

/** One heartbeat: a path silent that long is taken off. */
export const DEFAULT_DETECT_MS = 1000;
export const DEFAULT_RETRIES = 3;
export const DEFAULT_FRAME_BYTES = 4 * 1024 * 1024;
export const DEFAULT_WINDOW_BYTES = 4 * 1024 * 1024;

const KEYS = ['ber', 'down', 'at', 'detect', 'retries', 'frame', 'window'] as const;

/**
 * `ber=1e-9,down=n0.nic0,down=n1.nic3/rail3.leaf0,at=0.5,detect=1000,retries=3,frame=4M,window=4M`:
 * comma-separated items, `down` as often as there are failures. Every item is checked; a bad one
 * names itself and what was expected.
 */
export function parseFaults(text: string, argument = '--faults'): FaultSpec {
  const fail = (message: string) => invalidArgument(`${argument} '${text}': ${message}`, { argument });
  const items = text
    .split(',')
    .map((s) => s.trim())
    .filter((s) => s !== '');
  if (items.length === 0) throw fail('expected items like ber=1e-9 or down=n0.nic0');
  let ber = 0;
  const down: string[] = [];
  let at = 0;
  let detectMs = DEFAULT_DETECT_MS;
  let retries = DEFAULT_RETRIES;
  let frameBytes = DEFAULT_FRAME_BYTES;
  let windowBytes = DEFAULT_WINDOW_BYTES;
  for (const item of items) {
    const eq = item.indexOf('=');
    const key = eq < 0 ? item : item.slice(0, eq);
    const value = eq < 0 ? '' : item.slice(eq + 1).trim();
    if (!(KEYS as readonly string[]).includes(key))
      throw fail(`'${key}' is not a fault item: expected one of ${KEYS.map((k) => `${k}=`).join(', ')}`);
    if (value === '') throw fail(`${key}= needs a value`);
    const number = (min: number, max: number, what: string) => {
      const n = Number(value);
      if (!Number.isFinite(n) || n < min || n > max) throw fail(`${key}=${value}: expected ${what}`);
      return n;
    };
    switch (key) {
      case 'ber':
        ber = number(0, 0.5, 'a bit error rate from 0 to 0.5, e.g. 1e-9');
        break;
      case 'down':
        for (const part of value.split('/'))
          if (part.trim() === '') throw fail(`down=${value}: expected a device id, or two joined by / for a link`);
        down.push(value);
        break;
      case 'at':
        at = number(0, 0.999999, 'a fraction of the call from 0 (before it) to below 1');
        break;
      case 'detect':
        detectMs = number(0, 3_600_000, 'milliseconds from 0 to 3600000');
        break;
      case 'retries':
        retries = number(0, 1000, 'a whole number of retries from 0 to 1000');
        if (!Number.isInteger(retries)) throw fail(`retries=${value}: expected a whole number`);
        break;
      case 'frame':
        frameBytes = parseSize(value, `${argument} frame=`);
        if (frameBytes < 1) throw fail('frame= must be at least 1 byte');
        break;
      default:
        windowBytes = parseSize(value, `${argument} window=`);
    }
  }
  if (ber === 0 && down.length === 0) throw fail('nothing fails: give ber= above 0 or a down= item');
  return { ber, down, at, detectMs, retries, frameBytes, windowBytes };
}

/** The spec in a header line's words. */
export function describeFaults(spec: FaultSpec): string {
  const parts: string[] = [];
  if (spec.ber > 0)
    parts.push(
      `bit error rate ${spec.ber} on network links (frames up to ${spec.frameBytes} B resent up to ${spec.retries} times)`,
    );
  if (spec.down.length > 0)
    parts.push(
      spec.at === 0
        ? `${spec.down.join(', ')} down from the start (traffic on the paths left)`
        : `${spec.down.join(', ')} down at ${(spec.at * 100).toFixed(0)}% of the call, noticed after ${spec.detectMs} ms, up to ${spec.windowBytes} B unacknowledged sent again`,
    );
  return parts.join('; ');
}
