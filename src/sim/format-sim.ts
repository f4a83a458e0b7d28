import { BENCH_OPS } from '../algorithms/bench-ops.js';
import type { SimRow } from './simulate.js';

/**
 * The predicted nccl-tests table: the out-of-place columns of `tsccl bench` (a model has no
 * in-place difference and nothing to check, so #wrong is N/A), then what the simulator chose and
 * which link bounds the call.
 */
export function formatSimTable(rows: readonly SimRow[], header: string[]): string {
  const lines = header.map((h) => `# ${h}`);
  lines.push('#');
  lines.push(
    `#${'size'.padStart(12)}${'count'.padStart(14)}${'type'.padStart(8)}${'redop'.padStart(7)}${'root'.padStart(6)}${'time'.padStart(10)}${'algbw'.padStart(9)}${'busbw'.padStart(9)}${'#wrong'.padStart(7)}  ${'algorithm'.padEnd(19)}${'proto'.padEnd(7)}${'ch'.padStart(3)}  bottleneck (utilisation)`,
  );
  lines.push(
    `#${'(B)'.padStart(12)}${'(elements)'.padStart(14)}${''.padStart(21)}${'(us)'.padStart(10)}${'(GB/s)'.padStart(9)}${'(GB/s)'.padStart(9)}`,
  );
  for (const r of rows) {
    const bottleneck =
      r.bottleneck === undefined
        ? `(${r.mode}: ${r.bound} bound)`
        : `${r.bottleneck.link} ${r.bottleneck.kind} (${(r.bottleneck.utilisation * 100).toFixed(0)}%)`;
    lines.push(
      ` ${String(r.bytes).padStart(12)}${String(r.count).padStart(14)}${'float'.padStart(8)}${(r.reduces ? 'sum' : 'none').padStart(7)}${String(BENCH_OPS[r.op].rooted ? r.root : -1).padStart(6)}${fixed(r.timeUs).padStart(10)}${r.algbwGBs.toFixed(2).padStart(9)}${r.busbwGBs.toFixed(2).padStart(9)}${'N/A'.padStart(7)}  ${r.algorithm.length >= 19 ? `${r.algorithm} ` : r.algorithm.padEnd(19)}${r.protocol.padEnd(7)}${String(r.channels).padStart(3)}  ${bottleneck}`,
    );
  }
  const avg = rows.length === 0 ? 0 : rows.reduce((a, r) => a + r.busbwGBs, 0) / rows.length;
  lines.push(`# Avg bus bandwidth    : ${avg.toFixed(4)} (predicted)`);
  return lines.join('\n');
}

function fixed(us: number): string {
  return us >= 1000 ? us.toFixed(0) : us >= 10 ? us.toFixed(1) : us.toFixed(2);
}
