import { readFileSync } from 'node:fs';
import { Command, CommanderError, Option } from 'commander';
import { checkParams, unknownParams } from '../config/params.js';
import { benchCommand } from './bench-command.js';
import { reportRefusal } from './cli-error.js';
import { launchCommand } from './launch-command.js';
import { paramsCommand } from './params-command.js';
import { runCommand } from './run-command.js';
import { simCommand } from './sim-command.js';
import { topoCommand } from './topo-command.js';
import { withTorchrunSpellings } from './torchrun-spellings.js';
import { traceCommand } from './trace-command.js';
import { tuneCommand } from './tune-command.js';
import { uiCommand } from './ui-command.js';

const JOB_COMMANDS = new Set(['run', 'launch', 'bench']);

function packageVersion(): string {
  const manifest = JSON.parse(readFileSync(new URL('../../../package.json', import.meta.url), 'utf8')) as {
    version: string;
  };
  return manifest.version;
}

/** Entry point of the `tsccl` command; returns the process exit code. */
export async function main(argv: string[]): Promise<number> {
  let exitCode = 0;
  const program = new Command('tsccl')
    .description('Collective communication for JavaScript runtimes')
    .exitOverride()
    // Options after a launcher's script are the script's: `tsccl run -n 2 s.mjs -n 100` passes -n 100 on.
    .enablePositionalOptions()
    .configureOutput({ writeErr: (s) => process.stderr.write(s), writeOut: (s) => process.stdout.write(s) });
  program.version(packageVersion(), '-V, --version', 'print the version of tsccl');
  // Commands that start ranks refuse a bad TSCCL_* value once, here, before any rank exists.
  program.hook('preAction', (_program, action) => {
    if (!JOB_COMMANDS.has(action.name())) return;
    checkParams();
    for (const { name, closest } of unknownParams())
      process.stderr.write(
        `tsccl: warning: ${name} is not a tsccl variable (did you mean ${closest}?); it is ignored\n`,
      );
  });
  const format = () => new Option('--format <format>', 'output format').choices(['table', 'json']).default('table');
  runCommand(program, (code) => {
    exitCode = code;
  });
  launchCommand(program, (code) => {
    exitCode = code;
  });
  benchCommand(program, format(), (code) => {
    exitCode = code;
  });
  paramsCommand(program, format());
  traceCommand(program, format());
  topoCommand(program, format);
  tuneCommand(program, format);
  uiCommand(program);
  simCommand(program, format, argv, (code) => {
    exitCode = code;
  });
  try {
    await program.parseAsync(withTorchrunSpellings(argv), { from: 'user' });
    return exitCode;
  } catch (err) {
    if (err instanceof CommanderError) return err.exitCode;
    return reportRefusal(err);
  }
}
