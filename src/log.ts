import { paramString } from './config/params.js';

const LEVELS = ['NONE', 'WARN', 'INFO'] as const;
type Level = (typeof LEVELS)[number];

const configured = (() => {
  const value = paramString('TSCCL_DEBUG').toUpperCase();
  const index = LEVELS.indexOf(value as Level);
  return index < 0 ? 1 : index;
})();

/** Writes to stderr when TSCCL_DEBUG is at `level` or above; the message is built only then. */
export function log(level: 'WARN' | 'INFO', message: () => string): void {
  if (LEVELS.indexOf(level) <= configured) process.stderr.write(`tsccl ${level} ${message()}\n`);
}
