import { spawn } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import type { Command } from 'commander';
import { PRESET_NAMES } from '../topology/presets/presets.js';
import { staticReport } from '../ui/static-report.js';
import { type UiContext, answerApi } from '../ui/ui-api.js';
import { startUiServer } from '../ui/ui-server.js';
import { type ViewState, stateFromQuery, stateToQuery } from '../ui/view-state.js';
import { InvalidArgumentError } from 'commander';
import { invalidArgument } from '../errors.js';
import { parseNonNegativeInt } from './parse.js';

export function uiCommand(program: Command): void {
  program
    .command('ui')
    .description(
      'the page: topologies and link use, simulated curves against measured ones, a collective step by step, a training step, a stuck job',
    )
    .option('--port <n>', 'port to serve on (default: a free one)', parsePort, 0)
    .option('--open', 'open the page in the default browser')
    .option('--allow-remote', 'serve other machines too (default: this machine only)')
    .option('--out <file>', 'write one self-contained HTML file (data and code inlined) instead of serving')
    .option('--topo <topology>', `preset (${PRESET_NAMES.join(', ')}) or topology .json file to start with`)
    .option('--bench <files...>', 'tsccl bench --format json files to overlay on the curves')
    .option('--trace-dir <dir>', 'flight records of a job (TSCCL_TRACE_DIR) for the job view')
    .option(
      '--train-trace <files...>',
      "Chrome traces of measured training runs (tsccl/train's writeTrace) for the training view",
    )
    .option(
      '--view <query>',
      'the rest of the starting state as the permalink writes it, e.g. "view=timeline&algo=ring"',
    )
    .action(async (flags: Record<string, unknown>) => {
      const context: UiContext = {
        ...(flags.topo !== undefined && !PRESET_NAMES.includes(flags.topo as string)
          ? { topologyFile: flags.topo as string }
          : {}),
        benchFiles: (flags.bench as string[] | undefined) ?? [],
        ...(flags.traceDir === undefined ? {} : { traceDir: flags.traceDir as string }),
        ...(flags.trainTrace === undefined ? {} : { trainTraces: flags.trainTrace as string[] }),
      };
      const state: ViewState = {
        ...stateFromQuery((flags.view as string | undefined) ?? ''),
        ...(flags.topo === undefined ? {} : { topo: flags.topo as string }),
      };
      // Files named on the command line are read now, so a bad one is refused before a page is shown.
      answerApi('api/bench', context);
      answerApi('api/measured', context);
      if (context.traceDir !== undefined) answerApi('api/job', context);
      if (context.topologyFile !== undefined)
        answerApi(`api/topology?topo=${encodeURIComponent(context.topologyFile)}`, context);
      if (flags.out !== undefined) {
        const html = staticReport(state, context);
        try {
          writeFileSync(flags.out as string, html);
        } catch (err) {
          throw invalidArgument(`--out ${flags.out as string}: ${(err as Error).message}`, { argument: '--out' });
        }
        process.stdout.write(
          `wrote ${flags.out as string} (${(html.length / 1024).toFixed(0)} KiB): open it in a browser, no server needed\n`,
        );
        return;
      }
      const server = await startUiServer({
        port: flags.port as number,
        allowRemote: flags.allowRemote === true,
        context,
      });
      const query = stateToQuery(state);
      const url = `${server.url}${query === '' ? '' : `#${query}`}`;
      process.stdout.write(`tsccl ui: ${url}\n(Ctrl-C to stop)\n`);
      if (flags.open === true) openBrowser(url);
      await new Promise<void>((done) => {
        const stop = () => {
          void server.close().then(done);
        };
        process.once('SIGINT', stop);
        process.once('SIGTERM', stop);
      });
    });
}

function openBrowser(url: string): void {
  const opener = process.platform === 'darwin' ? 'open' : process.platform === 'win32' ? 'explorer' : 'xdg-open';
  const child = spawn(opener, [url], { stdio: 'ignore', detached: true });
  child.on('error', () => process.stderr.write(`tsccl ui: could not start ${opener}; open ${url} yourself\n`));
  child.unref();
}

/** A TCP port: 0 (a free one) to 65535. */
function parsePort(value: string): number {
  const port = parseNonNegativeInt(value, '--port');
  if (port > 65535) throw new InvalidArgumentError(`--port must be at most 65535, got '${value}'`);
  return port;
}
