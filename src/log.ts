import { paramString } from './config/params.js';

const LEVELS = ['NONE', 'WARN', 'INFO'] as const;
type Level = (typeof LEVELS)[number];

let level: number | undefined;

/** The configured level, read at the first log call (not at import), then kept: calls log on the hot path. */
function configured(): number {
  if (level === undefined) {
    const index = LEVELS.indexOf(paramString('TSCCL_DEBUG').toUpperCase() as Level);
    level = index < 0 ? 1 : index;
  }
  return level;
}

/** Writes to stderr when TSCCL_DEBUG is at `level` or above; the message is built only then. */
export function log(level: 'WARN' | 'INFO', message: () => string): void {
  if (logs(level)) process.stderr.write(`tsccl ${level} ${message()}\n`);
}

/** Whether TSCCL_DEBUG is at `level` or above: a hot path asks before it makes log's closure. */
export function logs(level: 'WARN' | 'INFO'): boolean {
  return (level === 'WARN' ? 1 : 2) <= configured();
}
