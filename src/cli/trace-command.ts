import { readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import type { Command, Option } from 'commander';
import type { RankDump } from '../debug/flight-recorder.js';
import { analyzeTraces, formatVerdicts } from '../debug/trace-analysis.js';
import { invalidArgument } from '../errors.js';

export function traceCommand(program: Command, format: Option): void {
  program
    .command('trace')
    .description(
      "read every rank's flight records (rank-*.json) and name where the ranks diverged or who never arrived",
    )
    .argument('<dir>', 'directory the ranks dumped into (TSCCL_TRACE_DIR)')
    .addOption(format)
    .action((dir: string, options: { format: string }) => {
      let files: string[];
      try {
        files = readdirSync(dir).filter((f) => /^rank-\d+\.json$/.test(f));
      } catch (err) {
        throw invalidArgument(`Cannot read trace directory ${dir}: ${(err as Error).message}`, { argument: 'dir' });
      }
      if (files.length === 0) throw invalidArgument(`No rank-*.json flight records in ${dir}`, { argument: 'dir' });
      const dumps = files.map((f) => JSON.parse(readFileSync(join(dir, f), 'utf8')) as RankDump);
      checkOneJob(dir, files, dumps);
      const verdicts = analyzeTraces(dumps);
      process.stdout.write(
        options.format === 'json'
          ? `${JSON.stringify({ ranks: dumps.map((d) => ({ rank: d.rank, reason: d.reason, time: d.time })), communicators: verdicts }, null, 2)}\n`
          : `${formatVerdicts(verdicts)}\n`,
      );
    });
}

/** Records of different jobs, or of worlds of different sizes, would read as a false divergence. */
function checkOneJob(dir: string, files: readonly string[], dumps: readonly RankDump[]): void {
  const jobOf = (d: RankDump) => `${d.job ?? 'an unnamed job'} of ${d.size ?? '?'} ranks`;
  const groups = new Map<string, string[]>();
  dumps.forEach((d, i) => {
    groups.set(jobOf(d), [...(groups.get(jobOf(d)) ?? []), files[i]]);
  });
  if (groups.size <= 1) return;
  const listed = [...groups].map(([job, names]) => `${job}: ${names.join(', ')}`).join('; ');
  throw invalidArgument(
    `${dir} holds the records of ${groups.size} jobs, which tsccl trace does not mix (${listed}); give it one job's directory`,
    { argument: 'dir' },
  );
}
