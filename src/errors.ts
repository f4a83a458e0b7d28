/**
 * One error type for the whole library. Codes are stable strings that callers may switch on;
 * messages are for people. Errors cross worker boundaries as plain JSON (toJSON/fromJSON), so a
 * launcher can rethrow the exact error a rank saw.
 */
export const ErrorCode = {
  INVALID_ARGUMENT: 'TSCCL_ERR_INVALID_ARGUMENT',
  TIMEOUT: 'TSCCL_ERR_TIMEOUT',
  ABORTED: 'TSCCL_ERR_ABORTED',
  PEER_LOST: 'TSCCL_ERR_PEER_LOST',
  MISMATCH: 'TSCCL_ERR_MISMATCH',
  CHECKSUM: 'TSCCL_ERR_CHECKSUM',
  DESTROYED: 'TSCCL_ERR_DESTROYED',
  COMM_FAILED: 'TSCCL_ERR_COMM_FAILED',
  OUT_OF_MEMORY: 'TSCCL_ERR_OUT_OF_MEMORY',
  INTERNAL: 'TSCCL_ERR_INTERNAL',
  RANK_FAILED: 'TSCCL_ERR_RANK_FAILED',
} as const;

export type ErrorCodeValue = (typeof ErrorCode)[keyof typeof ErrorCode];

export interface TscclErrorDetails {
  rank?: number;
  peer?: number;
  op?: string;
  seq?: number;
  argument?: string;
  [key: string]: unknown;
}

export interface TscclErrorJSON {
  name: 'TscclError';
  code: ErrorCodeValue;
  message: string;
  details: TscclErrorDetails;
  stack?: string;
}

export class TscclError extends Error {
  readonly code: ErrorCodeValue;
  readonly details: TscclErrorDetails;

  constructor(code: ErrorCodeValue, message: string, details: TscclErrorDetails = {}) {
    super(message);
    this.name = 'TscclError';
    this.code = code;
    this.details = details;
  }

  toJSON(): TscclErrorJSON {
    return { name: 'TscclError', code: this.code, message: this.message, details: this.details, stack: this.stack };
  }

  static fromJSON(json: TscclErrorJSON): TscclError {
    const err = new TscclError(json.code, json.message, json.details);
    if (json.stack !== undefined) err.stack = json.stack;
    return err;
  }

  static isJSON(value: unknown): value is TscclErrorJSON {
    return typeof value === 'object' && value !== null && (value as { name?: unknown }).name === 'TscclError'
      && typeof (value as { code?: unknown }).code === 'string';
  }
}

export function invalidArgument(message: string, details: TscclErrorDetails = {}): TscclError {
  return new TscclError(ErrorCode.INVALID_ARGUMENT, message, details);
}
