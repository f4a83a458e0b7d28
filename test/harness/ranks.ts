import { type RunOptions, type RunResult, run } from '../../src/launch/run.js';

/** Runs a compiled fixture from test/fixtures as `ranks` thread ranks, with output kept quiet. */
export function runFixture(fixture: string, ranks: number, args: unknown = {}, options: Partial<RunOptions> = {}): Promise<RunResult> {
  const script = new URL(`../fixtures/${fixture}.js`, import.meta.url).href;
  return run({ ranks, script, args: [JSON.stringify(args)], output: 'silent', timeoutMs: 60_000, ...options });
}
