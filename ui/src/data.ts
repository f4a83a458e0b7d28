declare global {
  interface Window {
    /** A static report's embedded API answers, by URL. */
    __TSCCL_DATA__?: Record<string, unknown>;
    /** A static report's starting state (a permalink query). */
    __TSCCL_STATE__?: string;
  }
}

/** A refusal as the server sends it: a TscclError's code, message and the parameter at fault. */
export class ApiError extends Error {
  readonly code: string;
  readonly argument: string | null;
  constructor(code: string, message: string, argument: string | null) {
    super(message);
    this.code = code;
    this.argument = argument;
  }
}

export const isStatic = () => window.__TSCCL_DATA__ !== undefined;

/** One API answer: from the server, or from the report's embedded answers. */
export async function load<T>(url: string, signal?: AbortSignal): Promise<T> {
  const embedded = window.__TSCCL_DATA__;
  let body: unknown;
  if (embedded !== undefined) {
    if (!(url in embedded))
      throw new ApiError(
        'TSCCL_ERR_UNAVAILABLE',
        `This report was written for other settings and does not hold ${url}. Serve it live with tsccl ui, or write a report with these settings (tsccl ui --out FILE --view "...").`,
        null,
      );
    body = embedded[url];
  } else {
    const response = await fetch(url, { signal });
    body = await response.json();
  }
  const refusal = (body as { error?: { code: string; message: string; argument: string | null } } | null)?.error;
  if (refusal !== undefined) throw new ApiError(refusal.code, refusal.message, refusal.argument);
  return body as T;
}
