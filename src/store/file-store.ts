import { mkdir, open, readFile, rename, rm, stat, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { ErrorCode, TscclError, invalidArgument } from '../errors.js';
import { type Store, type StoreCallOptions, checkKey, checkValue, storeTimeout } from './store.js';

const POLL_MS = 10;
const STALE_LOCK_MS = 30_000;

/**
 * A store in a directory of a shared file system, for jobs whose hosts share one but no port.
 * A value is a file written whole and renamed into place (readers never see half a value);
 * read-modify-write calls (add, compareSet) hold a lock file created with O_EXCL.
 */
export class FileStore implements Store {
  private readonly dir: string;
  private readonly defaultTimeoutMs: number;

  private constructor(dir: string, defaultTimeoutMs: number) {
    this.dir = dir;
    this.defaultTimeoutMs = defaultTimeoutMs;
  }

  static async open(dir: string, options: { timeoutMs?: number } = {}): Promise<FileStore> {
    await mkdir(dir, { recursive: true });
    return new FileStore(dir, options.timeoutMs ?? 300_000);
  }

  async set(key: string, value: Uint8Array): Promise<void> {
    await this.write(checkKey(key), checkValue(value));
  }

  async get(key: string, options: StoreCallOptions = {}): Promise<Uint8Array> {
    await this.wait([key], options);
    return new Uint8Array(await readFile(this.path(key)));
  }

  async wait(keys: readonly string[], options: StoreCallOptions = {}): Promise<void> {
    keys.forEach(checkKey);
    const timeoutMs = options.timeoutMs ?? this.defaultTimeoutMs;
    const deadline = performance.now() + timeoutMs;
    for (;;) {
      const present = await Promise.all(keys.map((k) => this.exists(k)));
      if (present.every(Boolean)) return;
      if (options.signal?.aborted)
        throw new TscclError(ErrorCode.ABORTED, `Store wait for ${keys.join(', ')} was aborted`, { op: 'store' });
      if (performance.now() > deadline) throw storeTimeout(`wait for ${keys.join(', ')}`, timeoutMs);
      await new Promise((r) => setTimeout(r, POLL_MS));
    }
  }

  async add(key: string, delta: number, options: StoreCallOptions = {}): Promise<number> {
    checkKey(key);
    if (!Number.isSafeInteger(delta))
      throw invalidArgument(`store add delta must be a safe integer, got ${delta}`, { argument: 'delta' });
    return this.locked(key, options, async () => {
      const current = (await this.exists(key)) ? Number((await readFile(this.path(key))).toString()) : 0;
      if (!Number.isSafeInteger(current))
        throw invalidArgument(`store key '${key}' does not hold a counter`, { argument: 'key' });
      await this.write(key, Buffer.from(String(current + delta)));
      return current + delta;
    });
  }

  async compareSet(
    key: string,
    expected: Uint8Array,
    desired: Uint8Array,
    options: StoreCallOptions = {},
  ): Promise<Uint8Array> {
    checkKey(key);
    return this.locked(key, options, async () => {
      const current = (await this.exists(key)) ? await readFile(this.path(key)) : undefined;
      const matches = current === undefined ? expected.byteLength === 0 : current.equals(expected);
      if (matches) {
        await this.write(key, checkValue(desired, 'desired'));
        return Uint8Array.from(desired);
      }
      return current === undefined ? new Uint8Array(0) : new Uint8Array(current);
    });
  }

  async delete(key: string): Promise<boolean> {
    const existed = await this.exists(checkKey(key));
    await rm(this.path(key), { force: true });
    return existed;
  }

  async close(): Promise<void> {}

  private path(key: string): string {
    return join(this.dir, `k-${Buffer.from(key).toString('hex')}`);
  }

  private async exists(key: string): Promise<boolean> {
    try {
      await stat(this.path(key));
      return true;
    } catch {
      return false;
    }
  }

  private async write(key: string, value: Uint8Array): Promise<void> {
    const temp = `${this.path(key)}.${process.pid}.${Math.random().toString(36).slice(2)}.tmp`;
    await writeFile(temp, value);
    await rename(temp, this.path(key));
  }

  private async locked<T>(key: string, options: StoreCallOptions, body: () => Promise<T>): Promise<T> {
    const lock = `${this.path(key)}.lock`;
    const timeoutMs = options.timeoutMs ?? this.defaultTimeoutMs;
    const deadline = performance.now() + timeoutMs;
    for (;;) {
      try {
        const handle = await open(lock, 'wx');
        await handle.close();
        break;
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
        // A holder that died leaves its lock behind; an old lock is taken over.
        const age = await stat(lock).then(
          (s) => Date.now() - s.mtimeMs,
          () => 0,
        );
        if (age > STALE_LOCK_MS) await rm(lock, { force: true });
        if (performance.now() > deadline) throw storeTimeout(`lock of ${key}`, timeoutMs);
        await new Promise((r) => setTimeout(r, POLL_MS));
      }
    }
    try {
      return await body();
    } finally {
      await rm(lock, { force: true });
    }
  }
}
