import { ErrorCode, TscclError } from '../errors.js';
import { dumpFlightRecords } from '../debug/flight-recorder.js';
import type { CommBackend } from './backend.js';

/**
 * Whether a communicator may still be used on this rank, and what happens when a call fails:
 * after a call fails mid-flight the queues to its peers are out of step, so the communicator is
 * retired (as NCCL requires ncclCommAbort after an error) and peers are told through the status words.
 */
export class FailurePolicy {
  /** Why the communicator is unusable, once it is: every later call throws it. */
  failure: TscclError | undefined;
  destroyed = false;

  private readonly comm: { readonly name: string; readonly rank: number; readonly backend: CommBackend };

  constructor(comm: { name: string; rank: number; backend: CommBackend }) {
    this.comm = comm;
  }

  /** Throws unless the communicator can take a call. */
  ensureUsable(): void {
    if (this.destroyed) throw this.destroyedError();
    if (this.failure !== undefined) throw this.failure;
  }

  destroyedError(): TscclError {
    return new TscclError(
      ErrorCode.DESTROYED,
      `Communicator ${this.comm.name} on rank ${this.comm.rank} was destroyed`,
      { rank: this.comm.rank },
    );
  }

  /** Retires the communicator after call `seq` failed with `err` (not for bad arguments); returns the error to throw. */
  fail(err: unknown, seq: number): unknown {
    const { name, rank, backend } = this.comm;
    if (err instanceof TscclError && err.code !== ErrorCode.INVALID_ARGUMENT && this.failure === undefined) {
      // An abort stays an abort for every later call too; other failures retire the communicator.
      this.failure = new TscclError(
        err.code === ErrorCode.ABORTED ? ErrorCode.ABORTED : ErrorCode.COMM_FAILED,
        `Communicator ${name} on rank ${rank} is unusable after an earlier failure: ${err.message}`,
        { rank, cause: err.code },
      );
      const origin =
        typeof err.details.origin === 'number'
          ? err.details.origin
          : err.code === ErrorCode.PEER_LOST && typeof err.details.peer === 'number'
            ? err.details.peer
            : rank;
      backend.status.fail(err.code, seq, origin);
      dumpFlightRecords(`${err.code}: ${err.message}`);
    }
    return err;
  }

  /** The failed call ran again over new connections (operation retry): the communicator is usable again. */
  recovered(): void {
    if (this.failure?.code !== ErrorCode.ABORTED) this.failure = undefined;
  }

  /** Ends every pending call now (TSCCL_ERR_ABORTED) and tells the peers; `seq` is the last collective started. Never blocks. */
  abort(reason: string, seq: number): void {
    const { name, rank, backend } = this.comm;
    if (this.failure?.code === ErrorCode.ABORTED) return;
    this.failure = new TscclError(ErrorCode.ABORTED, `Communicator ${name} was aborted on rank ${rank}: ${reason}`, {
      rank,
    });
    backend.status.fail(ErrorCode.ABORTED, seq, rank);
    backend.wakeAll();
    dumpFlightRecords(`abort: ${reason}`);
  }
}
