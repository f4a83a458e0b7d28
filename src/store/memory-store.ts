import { ErrorCode, TscclError, invalidArgument } from '../errors.js';
import { type Store, type StoreCallOptions, checkKey, checkValue, storeTimeout } from './store.js';

const DEFAULT_TIMEOUT_MS = 300_000;

/**
 * The store in one thread's memory: what the TCP store server serves, and a store for tests.
 * Waiters are woken by the write that completes their keys, not by polling.
 */
export class MemoryStore implements Store {
  private readonly values = new Map<string, Uint8Array>();
  private readonly waiters = new Set<{ keys: readonly string[]; wake: () => void }>();
  private closed = false;

  async set(key: string, value: Uint8Array): Promise<void> {
    this.write(checkKey(key), checkValue(value).slice());
  }

  async get(key: string, options: StoreCallOptions = {}): Promise<Uint8Array> {
    await this.wait([checkKey(key)], options);
    return this.values.get(key)!.slice();
  }

  async wait(keys: readonly string[], options: StoreCallOptions = {}): Promise<void> {
    keys.forEach(checkKey);
    const timeoutMs = options.timeoutMs ?? DEFAULT_TIMEOUT_MS;
    if (this.has(keys)) return;
    if (this.closed) throw new TscclError(ErrorCode.ABORTED, 'Store is closed', { op: 'store' });
    await new Promise<void>((resolve, reject) => {
      const waiter = { keys, wake: () => finish() };
      const onAbort = () =>
        finish(new TscclError(ErrorCode.ABORTED, `Store wait for ${keys.join(', ')} was aborted`, { op: 'store' }));
      const timer = setTimeout(() => finish(storeTimeout(`wait for ${keys.join(', ')}`, timeoutMs)), timeoutMs);
      const finish = (err?: TscclError) => {
        clearTimeout(timer);
        this.waiters.delete(waiter);
        options.signal?.removeEventListener('abort', onAbort);
        if (err) reject(err);
        else resolve();
      };
      if (options.signal?.aborted) return onAbort();
      options.signal?.addEventListener('abort', onAbort, { once: true });
      this.waiters.add(waiter);
    });
  }

  async add(key: string, delta: number): Promise<number> {
    checkKey(key);
    if (!Number.isSafeInteger(delta))
      throw invalidArgument(`store add delta must be a safe integer, got ${delta}`, { argument: 'delta' });
    const current = this.values.get(key);
    const before = current === undefined ? 0 : Number(Buffer.from(current).toString());
    if (!Number.isSafeInteger(before))
      throw invalidArgument(`store key '${key}' does not hold a counter`, { argument: 'key' });
    const after = before + delta;
    this.write(key, Buffer.from(String(after)));
    return after;
  }

  async compareSet(key: string, expected: Uint8Array, desired: Uint8Array): Promise<Uint8Array> {
    checkKey(key);
    checkValue(expected, 'expected');
    checkValue(desired, 'desired');
    const current = this.values.get(key);
    const matches = current === undefined ? expected.byteLength === 0 : Buffer.from(current).equals(expected);
    if (matches) this.write(key, desired.slice());
    return (this.values.get(key) ?? new Uint8Array(0)).slice();
  }

  async delete(key: string): Promise<boolean> {
    return this.values.delete(checkKey(key));
  }

  async close(): Promise<void> {
    this.closed = true;
  }

  /** Number of stored keys (for limits and tests). */
  get size(): number {
    return this.values.size;
  }

  private has(keys: readonly string[]): boolean {
    return keys.every((k) => this.values.has(k));
  }

  private write(key: string, value: Uint8Array): void {
    this.values.set(key, value);
    for (const waiter of [...this.waiters]) if (this.has(waiter.keys)) waiter.wake();
  }
}
