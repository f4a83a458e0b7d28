import type { Store } from '../store/store.js';

/** What a rank says at a retry meeting: the call it failed in, and why it cannot run it again, if it cannot. */
interface Word {
  readonly seq: number;
  readonly veto?: string;
}

/** A word as another rank wrote it, or undefined if it is not one. */
function readWord(bytes: Uint8Array): Word | undefined {
  try {
    const word = JSON.parse(Buffer.from(bytes).toString()) as unknown;
    if (typeof word !== 'object' || word === null) return undefined;
    const { seq, veto } = word as Record<string, unknown>;
    if (!Number.isInteger(seq) || (veto !== undefined && typeof veto !== 'string')) return undefined;
    return veto === undefined ? { seq: seq as number } : { seq: seq as number, veto };
  } catch {
    return undefined;
  }
}

/**
 * The ranks' agreement before a failed call runs again (operation-retry.ts): each rank writes
 * under `name` the call it failed in and, if it cannot run it again, why; then reads every other
 * rank's word. Undefined if every rank failed in that same call and can run it again; else why
 * not, naming the rank. It ends as soon as one rank cannot, when `signal` aborts (its reason says
 * why), and after `waitMs` for a rank that never comes (its host went down, or it ended the call
 * and makes no other).
 */
export async function meetForRetry(
  store: Store,
  meeting: {
    readonly name: string;
    readonly rank: number;
    readonly nranks: number;
    readonly seq: number;
    readonly veto: string | undefined;
    readonly waitMs: number;
    readonly signal: AbortSignal | undefined;
  },
): Promise<string | undefined> {
  const { name, rank, nranks, seq, veto, waitMs, signal } = meeting;
  const word: Word = veto === undefined ? { seq } : { seq, veto };
  await store.set(`${name}/${rank}`, Buffer.from(JSON.stringify(word)), { timeoutMs: waitMs, signal });
  if (veto !== undefined) return `rank ${rank} cannot: ${veto}`;
  if (nranks === 1) return undefined;
  const done = new AbortController();
  const reading = signal === undefined ? done.signal : AbortSignal.any([done.signal, signal]);
  try {
    return await new Promise<string | undefined>((resolve) => {
      let agreed = 0;
      for (let peer = 0; peer < nranks; peer++) {
        if (peer === rank) continue;
        store.get(`${name}/${peer}`, { timeoutMs: waitMs, signal: reading }).then(
          (bytes) => {
            const said = readWord(bytes);
            if (said === undefined) resolve(`rank ${peer}'s word is unreadable`);
            else if (said.veto !== undefined) resolve(`rank ${peer} cannot: ${said.veto}`);
            else if (said.seq !== seq)
              resolve(`rank ${peer} failed in call #${said.seq}, this rank in #${seq}: they cannot run one call again`);
            else if (++agreed === nranks - 1) resolve(undefined);
          },
          (err: Error) =>
            resolve(
              signal?.aborted
                ? `it stopped waiting: ${String(signal.reason)}`
                : `rank ${peer} did not come to run it again within ${waitMs} ms (${err.message})`,
            ),
        );
      }
    });
  } finally {
    done.abort();
  }
}
