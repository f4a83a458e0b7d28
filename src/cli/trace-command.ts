import type { Command, Option } from 'commander';
import { formatVerdicts } from '../debug/trace-analysis.js';
import { traceDocument } from '../debug/trace-document.js';

export function traceCommand(program: Command, format: Option): void {
  program
    .command('trace')
    .description(
      "read every rank's flight records (rank-*.json) and name where the ranks diverged or who never arrived",
    )
    .argument('<dir>', 'directory the ranks dumped into (TSCCL_TRACE_DIR)')
    .addOption(format)
    .action((dir: string, options: { format: string }) => {
      const doc = traceDocument(dir);
      process.stdout.write(
        options.format === 'json'
          ? `${JSON.stringify({ ranks: doc.ranks, communicators: doc.communicators }, null, 2)}\n`
          : `${formatVerdicts(doc.communicators)}\n`,
      );
    });
}
