import { useEffect, useState } from 'preact/hooks';
import { ApiError, load } from './data.js';

export type Loaded<T> =
  | { readonly state: 'loading' }
  | { readonly state: 'failed'; readonly error: ApiError }
  | { readonly state: 'ready'; readonly data: T };

/** Loads an API answer whenever its URL changes; a newer URL cancels the older request. */
export function useApi<T>(url: string | undefined): Loaded<T> {
  const [loaded, setLoaded] = useState<Loaded<T>>({ state: 'loading' });
  useEffect(() => {
    if (url === undefined) return;
    const controller = new AbortController();
    setLoaded({ state: 'loading' });
    load<T>(url, controller.signal).then(
      (data) => {
        if (!controller.signal.aborted) setLoaded({ state: 'ready', data });
      },
      (err: unknown) => {
        if (controller.signal.aborted) return;
        setLoaded({
          state: 'failed',
          error: err instanceof ApiError ? err : new ApiError('TSCCL_ERR_INTERNAL', String(err), null),
        });
      },
    );
    return () => controller.abort();
  }, [url]);
  return loaded;
}
