import { TscclError } from '../../src/errors.js';
import { type LaunchOptions, launch } from '../../src/launch/launch.js';
import { type RunOptions, type RunResult, run } from '../../src/launch/run.js';

const fixtureUrl = (fixture: string) => new URL(`../fixtures/${fixture}.js`, import.meta.url).href;

/** Runs a compiled fixture from test/fixtures as `ranks` thread ranks, with output kept quiet. */
export function runFixture(
  fixture: string,
  ranks: number,
  args: unknown = {},
  options: Partial<RunOptions> = {},
): Promise<RunResult> {
  return run({
    ranks,
    script: fixtureUrl(fixture),
    args: [JSON.stringify(args)],
    output: 'silent',
    timeoutMs: 60_000,
    ...options,
  });
}

/** The same fixture as `ranks` process ranks meeting over TCP on loopback. */
export function launchFixture(
  fixture: string,
  ranks: number,
  args: unknown = {},
  options: Partial<LaunchOptions> = {},
): Promise<RunResult> {
  return launch({
    nprocPerNode: ranks,
    mode: 'processes',
    script: fixtureUrl(fixture),
    args: [JSON.stringify(args)],
    output: 'silent',
    timeoutMs: 60_000,
    ...options,
  });
}

/** What every rank returned (undefined for a rank that died), also when the job failed because a rank died on purpose. */
export async function rankResults<T>(job: Promise<RunResult>): Promise<(T | undefined)[]> {
  try {
    return (await job).results as (T | undefined)[];
  } catch (err) {
    if (!(err instanceof TscclError) || !Array.isArray(err.details.ranks)) throw err;
    return (err.details.ranks as { result?: T }[]).map((r) => r.result);
  }
}
