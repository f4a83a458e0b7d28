import type { FlowWatch } from '../sim/sim-call.js';

/** A row that has run this long shows its progress on a terminal. */
const SHOW_AFTER_MS = 1000;

/**
 * Progress of the simulator's rows on stderr: on a terminal, one line rewritten in place for a
 * row that runs past a second, cleared when it ends; with `always` (`--progress`), a line per
 * report from the start, for logs. Never on stdout, so JSON output stays one document.
 */
export class SimProgress {
  private readonly terminal: boolean;
  private readonly always: boolean;
  private shown = false;

  constructor(options: { terminal: boolean; always: boolean }) {
    this.terminal = options.terminal;
    this.always = options.always;
  }

  /** The watch of row `index` of `rows`, with the deadline given (or none). */
  row(index: number, rows: number, bytes: number, deadlineMs: number | undefined): FlowWatch {
    const started = performance.now();
    const enabled = this.terminal || this.always;
    return {
      ...(deadlineMs === undefined ? {} : { deadlineMs }),
      ...(enabled
        ? {
            progress: (fraction: number) => {
              const elapsed = performance.now() - started;
              if (!this.always && elapsed < SHOW_AFTER_MS) return;
              const text = `# tsccl sim: row ${index + 1} of ${rows} (${bytes} B): flow engine ${(fraction * 100).toFixed(0)}% after ${(elapsed / 1000).toFixed(1)} s`;
              process.stderr.write(this.terminal && !this.always ? `\r${text}\x1b[K` : `${text}\n`);
              this.shown = true;
            },
          }
        : {}),
    };
  }

  /** A row ended: the terminal's progress line goes. */
  rowDone(): void {
    if (this.shown && this.terminal && !this.always) process.stderr.write('\r\x1b[K');
    this.shown = false;
  }
}
