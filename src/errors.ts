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
  UNAVAILABLE: 'TSCCL_ERR_UNAVAILABLE',
} as const;

export type ErrorCodeValue = (typeof ErrorCode)[keyof typeof ErrorCode];

/**
 * The number that stands for each code where codes cross a wire or shared memory (TCP failure
 * announcements, shared-memory status words; 0 there means "no failure"). Fixed: a new code takes
 * a new number, and `test/errors-wire.test.ts` pins these.
 */
const ERROR_WIRE_NUMBERS: Readonly<Record<ErrorCodeValue, number>> = {
  [ErrorCode.INVALID_ARGUMENT]: 1,
  [ErrorCode.TIMEOUT]: 2,
  [ErrorCode.ABORTED]: 3,
  [ErrorCode.PEER_LOST]: 4,
  [ErrorCode.MISMATCH]: 5,
  [ErrorCode.CHECKSUM]: 6,
  [ErrorCode.DESTROYED]: 7,
  [ErrorCode.COMM_FAILED]: 8,
  [ErrorCode.OUT_OF_MEMORY]: 9,
  [ErrorCode.INTERNAL]: 10,
  [ErrorCode.RANK_FAILED]: 11,
  [ErrorCode.UNAVAILABLE]: 12,
};

const ERROR_CODE_BY_WIRE_NUMBER = new Map<number, ErrorCodeValue>(
  Object.entries(ERROR_WIRE_NUMBERS).map(([code, n]) => [n, code as ErrorCodeValue]),
);

export function errorWireNumber(code: ErrorCodeValue): number {
  return ERROR_WIRE_NUMBERS[code];
}

/** The code a wire number stands for; a number no code has (a newer peer's) reads as INTERNAL. */
export function errorCodeOfWireNumber(n: number): ErrorCodeValue {
  return ERROR_CODE_BY_WIRE_NUMBER.get(n) ?? ErrorCode.INTERNAL;
}

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

  constructor(code: ErrorCodeValue, message: string, details: TscclErrorDetails = {}, options?: { cause?: unknown }) {
    super(message, options);
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
    return (
      typeof value === 'object' &&
      value !== null &&
      (value as { name?: unknown }).name === 'TscclError' &&
      typeof (value as { code?: unknown }).code === 'string'
    );
  }
}

/**
 * An error that is not a TscclError reached the library's edge: a bug of tsccl's, not the user's
 * call. It becomes TSCCL_ERR_INTERNAL with the original kept as `cause`, so it is never mistaken
 * for a mismatch between ranks.
 */
export function internalError(err: unknown, message: string, details: TscclErrorDetails = {}): TscclError {
  if (err instanceof TscclError) return err;
  const what = err instanceof Error ? `${err.name}: ${err.message}` : String(err);
  return new TscclError(ErrorCode.INTERNAL, `${message}: ${what} (an internal error of tsccl)`, details, {
    cause: err,
  });
}

/** "rank 3" or "ranks 0, 1 and 3", for messages that name the ranks involved. */
export function rankList(ranks: readonly number[]): string {
  if (ranks.length === 1) return `rank ${ranks[0]}`;
  return `ranks ${ranks.slice(0, -1).join(', ')} and ${ranks[ranks.length - 1]}`;
}

export function invalidArgument(message: string, details: TscclErrorDetails = {}): TscclError {
  return new TscclError(ErrorCode.INVALID_ARGUMENT, message, details);
}

/** Any error as plain data that crosses a thread or process boundary (a TscclError keeps its code and details). */
export function serializeError(err: unknown): unknown {
  if (err instanceof TscclError) return err.toJSON();
  if (err instanceof Error) return { name: err.name, message: err.message, stack: err.stack };
  return { name: 'Error', message: String(err) };
}

/** The error `serializeError` made plain, on the other side of the boundary. */
export function reviveError(value: unknown): Error {
  if (TscclError.isJSON(value)) return TscclError.fromJSON(value);
  const plain = value as { name?: string; message?: string; stack?: string };
  const err = new Error(plain?.message ?? String(value));
  if (plain?.name) err.name = plain.name;
  if (plain?.stack) err.stack = plain.stack;
  return err;
}
