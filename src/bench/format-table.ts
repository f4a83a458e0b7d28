import type { BenchOptions, BenchRow } from './bench-options.js';
import { dtypeInfo } from '../dtypes/dtype.js';

/**
 * The nccl-tests table: one line per size with out-of-place and in-place columns, then the
 * average bus bandwidth, so output from either tool can be read (and grepped) the same way.
 */
export function formatTable(options: BenchOptions, rows: readonly BenchRow[], header: string): string {
  // A compressed run's last two columns of each placement: the encoded bytes and the largest error.
  const compressed = options.compression !== undefined;
  const lastColumn = compressed ? `${'wire'.padStart(11)}${'maxerr'.padStart(10)}` : '#wrong'.padStart(7);
  const lastUnits = compressed ? `${'(B)'.padStart(11)}${''.padStart(10)}` : ''.padStart(7);
  const last = (row: BenchRow) =>
    compressed
      ? `${String(row.wireBytes ?? 0).padStart(11)}${(row.maxError === null || row.maxError === undefined ? 'N/A' : row.maxError.toExponential(2)).padStart(10)}`
      : (row.wrong === null ? 'N/A' : String(row.wrong)).padStart(7);
  const lines = [
    `# ${header}`,
    `# nRanks ${options.ranks} minBytes ${options.minBytes} maxBytes ${options.maxBytes} step: ${options.stepFactor > 1 ? `${options.stepFactor}(factor)` : `${options.stepBytes}(bytes)`} warmup iters: ${options.warmupIters}${(options.warmupSmall ?? 0) > options.warmupIters ? ` (${options.warmupSmall} up to 256 KiB)` : ''} iters: ${options.iters} validation: ${options.check ? 1 : 0}`,
    '#',
    ...(compressed
      ? [
          `# compression: ${options.compression} (busbw counts the caller's bytes; wire: the encoded bytes of the message)`,
        ]
      : []),
    `#${' '.repeat(62)}out-of-place${' '.repeat(16 + lastColumn.length)}in-place`,
    `#${'size'.padStart(12)}${'count'.padStart(14)}${'type'.padStart(10)}${'redop'.padStart(8)}${'root'.padStart(8)}${'time'.padStart(9)}${'algbw'.padStart(8)}${'busbw'.padStart(8)}${lastColumn}${'time'.padStart(9)}${'algbw'.padStart(8)}${'busbw'.padStart(8)}${lastColumn}`,
    `#${'(B)'.padStart(12)}${'(elements)'.padStart(14)}${''.padStart(26)}${'(us)'.padStart(9)}${'(GB/s)'.padStart(8)}${'(GB/s)'.padStart(8)}${lastUnits}${'(us)'.padStart(9)}${'(GB/s)'.padStart(8)}${'(GB/s)'.padStart(8)}`,
  ];
  const cells = (row: BenchRow | undefined) =>
    row === undefined
      ? `${'N/A'.padStart(9)}${'N/A'.padStart(8)}${'N/A'.padStart(8)}${'N/A'.padStart(lastColumn.length)}`
      : `${fixed(row.timeUs).padStart(9)}${row.algbwGBs.toFixed(2).padStart(8)}${row.busbwGBs.toFixed(2).padStart(8)}${last(row)}`;
  const sizes = [...new Set(rows.map((r) => r.bytes))];
  for (const bytes of sizes) {
    const out = rows.find((r) => r.bytes === bytes && !r.inPlace);
    const inp = rows.find((r) => r.bytes === bytes && r.inPlace);
    const any = (out ?? inp)!;
    lines.push(
      ` ${String(bytes).padStart(12)}${String(any.count).padStart(14)}${dtypeInfo(any.dtype).shortName.padStart(10)}${any.redop.padStart(8)}${String(any.root).padStart(8)}${cells(out)}${cells(inp)}`,
    );
  }
  const wrong = rows.reduce((a, r) => a + (r.wrong ?? 0), 0);
  lines.push(`# Out of bounds values : ${wrong} ${wrong === 0 ? 'OK' : 'FAILED'}`);
  lines.push(`# Avg bus bandwidth    : ${averageBusBandwidth(rows).toFixed(4)} `);
  lines.push('#');
  return lines.join('\n');
}

export function averageBusBandwidth(rows: readonly BenchRow[]): number {
  return rows.length === 0 ? 0 : rows.reduce((a, r) => a + r.busbwGBs, 0) / rows.length;
}

function fixed(us: number): string {
  return us >= 1000 ? us.toFixed(0) : us >= 10 ? us.toFixed(1) : us.toFixed(2);
}
