import type { Command, Option } from 'commander';
import { calibrate } from '../tune/calibrate.js';
import { profilePath, saveProfile } from '../topology/local-profile.js';
import { detectLocal } from '../topology/local-topology.js';
import { parsePositiveInt } from './parse.js';

export function tuneCommand(program: Command, format: () => Option): void {
  program
    .command('tune')
    .description(
      'measure shared-memory and TCP latency and bandwidth and the reduce kernel; save the profile --topo local and the tuner read',
    )
    .option(
      '--runs <n>',
      'repeated runs per measurement (medians); the small 2-rank calls take turns in 15 blocks per launch, the fastest of N launches',
      (v) => parsePositiveInt(v, '--runs'),
      3,
    )
    .option('--out <path>', 'where to write the profile (default TSCCL_PROFILE or ~/.cache/tsccl/profile.json)')
    .addOption(format())
    .action(async (flags: Record<string, unknown>) => {
      const json = flags.format === 'json';
      const detection = detectLocal();
      const log = (line: string) => {
        if (!json) process.stdout.write(`${line}\n`);
      };
      log(`# tsccl tune on ${detection.host}: ${detection.cores} cores, ${flags.runs as number} runs per measurement`);
      const profile = await calibrate(detection, flags.runs as number, log);
      const path = (flags.out as string | undefined) ?? profilePath();
      saveProfile(profile, path);
      if (json) process.stdout.write(`${JSON.stringify({ path, profile }, null, 2)}\n`);
      else log(`# profile written to ${path}`);
    });
}
