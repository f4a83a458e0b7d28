import type { TscclError } from '../errors.js';
import type { CommBackend, StatusBoard } from './backend.js';
import type { FailurePolicy } from './failure-policy.js';
import type { CommScope } from './op-context.js';

/**
 * A communicator's CommScope as methods of one class: every communicator's calls of them have
 * one target. As closures made per communicator, a call context's check(), compiled on init's
 * warm-up's communicators, was thrown away at the world's first wait long enough to check
 * (`--trace-deopt`: wrong call target).
 */
export class CommunicatorScope implements CommScope {
  readonly rank: number;
  readonly commName: string;
  readonly spinMs: number;
  readonly spinYields: boolean;
  /** The communicator's backend: set again when a call run again replaces it. */
  backend: CommBackend;
  private readonly failures: FailurePolicy;

  constructor(backend: CommBackend, failures: FailurePolicy, names: { rank: number; commName: string }) {
    this.rank = names.rank;
    this.commName = names.commName;
    this.spinMs = backend.spinMs;
    this.spinYields = backend.spinYields;
    this.backend = backend;
    this.failures = failures;
  }

  get status(): StatusBoard {
    return this.backend.status;
  }

  lostRank(seq: number | undefined): number | undefined {
    return this.backend.lostRank(seq);
  }

  localAbort(): TscclError | undefined {
    return this.failures.failure;
  }
}
