import type { TypedArray } from '../dtypes/dtype.js';
import { ErrorCode, TscclError } from '../errors.js';
import { crc32 } from '../kernels/crc32.js';

const bytesOf = (v: TypedArray) => new Uint8Array(v.buffer, v.byteOffset, v.byteLength);

/**
 * TSCCL_DEBUG_CHECK's watch on a call's input: a buffer handed to a call must not be written
 * until the call resolves. Its checksum is taken when the call is issued and compared when the
 * call starts (a queued call reads its input only then) and, where the call does not write the
 * input (out of place), when it ends. A change is TSCCL_ERR_CHECKSUM, as when a peer's bytes
 * change under a read: peers may have read either version, so the communicator is retired.
 */
export class InFlightGuard {
  private readonly issued: number;
  private readonly input: TypedArray;
  private readonly call: {
    readonly rank: number;
    readonly op: string;
    readonly seq: number;
    /** The call does not write its input (out of place): it must be unchanged at the end too. */
    readonly readOnly: boolean;
    /** No call before it writes its input, so any change before its start is the caller's. */
    readonly checkAtStart: boolean;
    /** The call is over, however it ended. */
    readonly release: () => void;
  };

  constructor(input: TypedArray, call: InFlightGuard['call']) {
    this.input = input;
    this.call = call;
    this.issued = crc32(bytesOf(input)) >>> 0;
  }

  /** The call is about to read its input. */
  started(): void {
    if (this.call.checkAtStart) this.compare('between its issue and its start');
  }

  /** The call ended; an input it did not write must be as it was. */
  ended(): void {
    this.call.release();
    if (this.call.readOnly) this.compare('while the call ran');
  }

  /** The call failed: nothing to compare, but it no longer writes anything. */
  failed(): void {
    this.call.release();
  }

  private compare(when: string): void {
    const now = crc32(bytesOf(this.input)) >>> 0;
    if (now === this.issued) return;
    const { rank, op, seq } = this.call;
    throw new TscclError(
      ErrorCode.CHECKSUM,
      `Rank ${rank}: the input of ${op} #${seq} changed ${when} (checksum ${this.issued.toString(16)} at issue, ${now.toString(16)} now): a buffer handed to a call must not be written until the call resolves (TSCCL_DEBUG_CHECK=1)`,
      { rank, op, seq, argument: 'buffer' },
    );
  }
}
