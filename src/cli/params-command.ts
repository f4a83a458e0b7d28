import type { Command, Option } from 'commander';
import { PARAMS } from '../config/params.js';

export function paramsCommand(program: Command, format: Option): void {
  program
    .command('params')
    .description('list every TSCCL_* environment variable with its default and current value')
    .addOption(format)
    .action((options: { format: string }) => {
      const rows = PARAMS.map((p) => ({
        name: p.name,
        default: p.defaultValue,
        value: process.env[p.name] ?? null,
        doc: p.doc,
      }));
      if (options.format === 'json') {
        process.stdout.write(`${JSON.stringify({ params: rows }, null, 2)}\n`);
        return;
      }
      const width = Math.max(...rows.map((r) => r.name.length));
      for (const r of rows) {
        process.stdout.write(
          `${r.name.padEnd(width)}  default ${JSON.stringify(r.default)}${r.value !== null ? `, set to ${JSON.stringify(r.value)}` : ''}\n    ${r.doc}\n`,
        );
      }
    });
}
