import type { Command } from 'commander';
import { run } from '../launch/run.js';
import { parsePositiveInt } from './parse.js';

export function runCommand(program: Command, setExitCode: (code: number) => void): void {
  program
    .command('run')
    .description('run an ES module as N worker-thread ranks of one job; each output line is prefixed with its rank')
    .requiredOption('-n, --nproc <n>', 'number of ranks', (v) => parsePositiveInt(v, '--nproc'))
    .option('--timeout-ms <ms>', 'default timeout of every collective call', (v) => parsePositiveInt(v, '--timeout-ms'))
    .argument('<script>', 'ES module to run; its default export, if a function, is called with { rank, size, args }')
    .argument('[args...]', 'passed to the script')
    .allowUnknownOption()
    .passThroughOptions()
    .action(async (script: string, args: string[], options: { nproc: number; timeoutMs?: number }) => {
      const { ranks } = await run({ ranks: options.nproc, script, args, timeoutMs: options.timeoutMs });
      for (const outcome of ranks) {
        if (outcome.result !== undefined)
          process.stdout.write(`[${outcome.rank}] result: ${JSON.stringify(outcome.result)}\n`);
      }
      setExitCode(0);
    });
}
