import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { median } from './median.js';

/**
 * What a hand-off between two thread ranks costs the one core they share: two threads of a child
 * process pinned to one core (`taskset`) hand a flag back and forth, each spinning on it with
 * sched_yield as crowded ranks do (TSCCL_SPIN_YIELD), so every hand-off is one switch of the core
 * from one thread to the other, with nothing else to hide it behind. The simulator charges this
 * much of a crowded rank's hand-off on a core per other rank there (shm.oversubscribedSwitchUs);
 * the rest of the hand-off the 8 B ring measures is latency that other ranks' work hides.
 * Measured directly, as a fit to a timed ring swung with the VM's cache state (docs/tuning.md).
 * The median of `runs` children, or why it could not be measured.
 */
export function measureCoreSwitchUs(runs = 3): { us: number } | { missing: string } {
  const cpu = firstAllowedCpu();
  if (cpu === undefined) return { missing: "this process's CPU list (/proc/self/status)" };
  const probe = fileURLToPath(new URL('./core-switch-probe.js', import.meta.url));
  const samples: number[] = [];
  for (let run = 0; run < runs; run++) {
    const child = spawnSync('taskset', ['-c', String(cpu), process.execPath, probe], {
      encoding: 'utf8',
      timeout: 60_000,
    });
    if (child.error !== undefined) return { missing: `taskset (util-linux): ${child.error.message}` };
    if (child.status !== 0)
      return { missing: `a pinned probe (exit ${child.status}): ${child.stderr.trim().split('\n').pop() ?? ''}` };
    const result = JSON.parse(child.stdout) as { us?: number; missing?: string };
    if (result.us === undefined) return { missing: result.missing ?? 'a result from the probe' };
    samples.push(result.us);
  }
  return { us: median(samples) };
}

/** The first CPU this process may run on (its affinity), from /proc; undefined where unreadable. */
function firstAllowedCpu(): number | undefined {
  try {
    const line = readFileSync('/proc/self/status', 'utf8').match(/^Cpus_allowed_list:\s*(\d+)/m);
    return line === null ? undefined : Number(line[1]);
  } catch {
    return undefined;
  }
}
