// Reads the rows of a saved bench/regret.mjs table: per row, the op, rank count, bytes, the
// algorithm the tuner chose and every algorithm's measured time (us per call).
import { readFileSync } from 'node:fs';

// Rows of older runs have no calls-per-block column.
const ROW = /^\| (\w+) \| (\d+) \| (\d+) \| (?:\d+ \| )?([a-z_]+) \| \w+ \| [\d.]+ \| (.*) \|$/;

/** @returns {{ op: string, ranks: number, bytes: number, chose: string, times: Record<string, number> }[]} */
export function regretRows(file) {
  return readFileSync(file, 'utf8')
    .split('\n')
    .flatMap((line) => {
      const match = line.match(ROW);
      if (match === null) return [];
      const [, op, ranks, bytes, chose, timesText] = match;
      const times = Object.fromEntries(
        timesText
          .split(', ')
          .map((p) => p.split(' '))
          .map(([a, t]) => [a, Number(t)]),
      );
      return [{ op, ranks: Number(ranks), bytes: Number(bytes), chose, times }];
    });
}

/** Regret summary of a list: median, worst and how many exceed 1.3 (the bound). */
export function regretSummary(regrets) {
  const sorted = [...regrets].sort((a, b) => a - b);
  return `median ${sorted[sorted.length >> 1].toFixed(2)}, worst ${sorted[sorted.length - 1].toFixed(2)}, above 1.3: ${sorted.filter((x) => x > 1.3).length} of ${sorted.length}`;
}
