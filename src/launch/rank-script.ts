import { serializeError } from '../errors.js';
import { closeLiveTransports } from '../transport/tcp/tcp-transport.js';
import { syntaxErrorLocation } from './syntax-error-location.js';

/** What a rank's script sees: its default export, if a function, is called with this. */
export interface RankScriptContext {
  readonly rank: number;
  readonly size: number;
  readonly args: readonly string[];
}

/** What a launcher posts to a thread rank that is to write its flight records (it got SIGUSR1). */
export const DUMP_FLIGHT_RECORDS = 'tsccl-dump-flight-records';

export type RankOutcomeMessage = { type: 'result'; result: unknown } | { type: 'error'; error: unknown };

/** Imports a rank's script and runs its default export; never throws, reports instead. */
export async function runRankScript(scriptUrl: string, context: RankScriptContext): Promise<RankOutcomeMessage> {
  let module: { default?: unknown };
  try {
    module = (await import(scriptUrl)) as { default?: unknown };
  } catch (err) {
    if (err instanceof SyntaxError) {
      const location = syntaxErrorLocation(scriptUrl);
      if (location !== undefined) err.stack = `${location}\n\n${err.stack ?? `${err.name}: ${err.message}`}`;
    }
    return { type: 'error', error: serializeError(err) };
  }
  try {
    const result =
      typeof module.default === 'function'
        ? await (module.default as (c: RankScriptContext) => unknown)(context)
        : undefined;
    // Leave the job politely, so peers finishing their last call do not take this rank for dead.
    await closeLiveTransports();
    return { type: 'result', result };
  } catch (err) {
    return { type: 'error', error: serializeError(err) };
  }
}
