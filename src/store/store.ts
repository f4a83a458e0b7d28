import { ErrorCode, TscclError, invalidArgument } from '../errors.js';

/**
 * A small key-value store that ranks use to find each other (rendezvous), as torch.distributed's
 * Store. Values are bytes. Every call that can block takes { timeoutMs, signal }.
 */
export interface StoreCallOptions {
  timeoutMs?: number;
  signal?: AbortSignal;
}

export interface Store {
  set(key: string, value: Uint8Array, options?: StoreCallOptions): Promise<void>;
  /** Waits until the key exists, then returns its value. */
  get(key: string, options?: StoreCallOptions): Promise<Uint8Array>;
  /** Waits until every key exists. */
  wait(keys: readonly string[], options?: StoreCallOptions): Promise<void>;
  /** Adds to a counter stored as a decimal string (created at 0); returns the new value. */
  add(key: string, delta: number, options?: StoreCallOptions): Promise<number>;
  /**
   * Sets the key to `desired` if its value equals `expected` (an empty `expected` matches a
   * missing key); returns the value after the call.
   */
  compareSet(key: string, expected: Uint8Array, desired: Uint8Array, options?: StoreCallOptions): Promise<Uint8Array>;
  /** Removes the key; resolves to whether it existed. */
  delete(key: string, options?: StoreCallOptions): Promise<boolean>;
  close(): Promise<void>;
}

/** Limits that keep one client from exhausting a store. */
export const MAX_KEY_BYTES = 4096;
export const MAX_VALUE_BYTES = 64 * 1024 * 1024;

export function checkKey(key: unknown): string {
  if (typeof key !== 'string' || key.length === 0 || Buffer.byteLength(key) > MAX_KEY_BYTES) {
    throw invalidArgument(
      `store key must be a non-empty string of at most ${MAX_KEY_BYTES} bytes, got ${typeof key === 'string' ? `${Buffer.byteLength(key)} bytes` : typeof key}`,
      { argument: 'key' },
    );
  }
  return key;
}

export function checkValue(value: unknown, argument = 'value'): Uint8Array {
  if (!(value instanceof Uint8Array)) throw invalidArgument(`store ${argument} must be a Uint8Array`, { argument });
  if (value.byteLength > MAX_VALUE_BYTES) {
    throw invalidArgument(`store ${argument} of ${value.byteLength} bytes exceeds the limit of ${MAX_VALUE_BYTES}`, {
      argument,
    });
  }
  return value;
}

export function storeTimeout(what: string, timeoutMs: number): TscclError {
  return new TscclError(ErrorCode.TIMEOUT, `Store ${what} timed out after ${timeoutMs} ms`, { op: 'store' });
}

/** Namespaces every key, so several jobs or communicators can share one store. */
export class PrefixStore implements Store {
  private readonly inner: Store;
  private readonly prefix: string;

  constructor(prefix: string, inner: Store) {
    this.prefix = `${prefix}/`;
    this.inner = inner;
  }

  set(key: string, value: Uint8Array, options?: StoreCallOptions): Promise<void> {
    return this.inner.set(this.prefix + key, value, options);
  }
  get(key: string, options?: StoreCallOptions): Promise<Uint8Array> {
    return this.inner.get(this.prefix + key, options);
  }
  wait(keys: readonly string[], options?: StoreCallOptions): Promise<void> {
    return this.inner.wait(
      keys.map((k) => this.prefix + k),
      options,
    );
  }
  add(key: string, delta: number, options?: StoreCallOptions): Promise<number> {
    return this.inner.add(this.prefix + key, delta, options);
  }
  compareSet(key: string, expected: Uint8Array, desired: Uint8Array, options?: StoreCallOptions): Promise<Uint8Array> {
    return this.inner.compareSet(this.prefix + key, expected, desired, options);
  }
  delete(key: string, options?: StoreCallOptions): Promise<boolean> {
    return this.inner.delete(this.prefix + key, options);
  }
  /** The prefix view does not own the store underneath. */
  async close(): Promise<void> {}
}
